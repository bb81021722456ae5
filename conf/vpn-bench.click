// vpn-bench.click -- the VPN gateway of conf/vpn-pcap.click as a
// benchmark: no files, sources that never run dry (for `paraclick bench
// --mlffr` and `paraclick model --validate`).
//
// Outbound: UDP flows from the local site are encrypted into the tunnel
// (ESP tunnel mode, AES-128-GCM) and queued for the peer. Inbound: the
// peer's ESP packets, made here by the peer's own encapsulation (the
// bench has no peer), are authenticated, checked against the replay
// window, decrypted and queued for the local site. Each output queue is
// drained by its own Unqueue, standing in for a ToDevice.
//
//   paraclick conf/vpn-bench.click -h c0.count -h c1.count
//   paraclick bench --mlffr -j 2 conf/vpn-bench.click N=1000000000000

define($N 1000000, $LEN 64, $FLOWS 64, $ALG aes128gcm16,
       $KEY_OUT 0x00112233445566778899aabbccddeeff01020304,
       $KEY_IN 0xffeeddccbbaa99887766554433221100a0b0c0d0);

DriverManager(pause, pause);

out_src :: FastUDPFlows(0, $N, $LEN, 02:00:00:00:00:01, 10.0.0.1, 02:00:00:00:00:02, 10.1.0.1,
                        $FLOWS, 1000000000, STOP true);
in_src :: FastUDPFlows(0, $N, $LEN, 02:00:00:00:00:03, 10.1.0.1, 02:00:00:00:00:04, 10.0.0.1,
                       $FLOWS, 1000000000, STOP true);

out_src -> Strip(14) -> CheckIPHeader
  -> enc :: IPsecESPTunnelEncap(0x1001, $ALG, $KEY_OUT, 192.0.2.1, 198.51.100.1)
  -> q0 :: Queue(1000) -> Unqueue -> c0 :: Counter -> Discard;

in_src -> Strip(14) -> CheckIPHeader
  -> peer :: IPsecESPTunnelEncap(0x2002, $ALG, $KEY_IN, 198.51.100.1, 192.0.2.1)
  -> dec :: IPsecESPTunnelUnencap(0x2002, $ALG, $KEY_IN, 198.51.100.1, 192.0.2.1)
  -> CheckIPHeader
  -> q1 :: Queue(1000) -> Unqueue -> c1 :: Counter -> Discard;

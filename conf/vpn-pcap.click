// vpn-pcap.click -- an IPsec ESP tunnel-mode gateway over pcap files.
//
// The VPN of the SMP Click paper (Figures 6 and 7) with modern ESP: plain
// IPv4 packets from the local site are encrypted into the tunnel to the
// peer gateway; ESP packets from the peer are authenticated, checked
// against the anti-replay window, decrypted, and their inner packets come
// out. Every parameter is a define, overridable on the command line:
//
//   paraclick conf/vpn-pcap.click PLAIN_IN=p.pcap PLAIN_OUT=po.pcap \
//       ESP_IN=e.pcap ESP_OUT=eo.pcap LOCAL=192.0.2.1 PEER=198.51.100.1 \
//       SPI_OUT=0x1001 SPI_IN=0x2002 ALG=aes128gcm16 KEY_OUT=0x... KEY_IN=0x... \
//       -h enc.packets -h dec.packets -h dec.replay_drops -h dec.auth_failures
//
//   $PLAIN_IN   Ethernet frames from the local site (IPv4 is encrypted,
//               other frames are discarded)
//   $ESP_OUT    the encrypted packets to the peer, Ethernet-framed
//   $ESP_IN     Ethernet frames with ESP from the peer
//   $PLAIN_OUT  the decrypted inner packets, Ethernet-framed
//   $LOCAL, $PEER       the tunnel endpoints (outer addresses)
//   $SPI_OUT, $SPI_IN   the outbound and inbound SPIs (hex)
//   $ALG        aes128gcm16, aes256gcm16, aes128-sha1, aes256-sha256 or
//               3des-sha1 (strongSwan's names; see `paraclick doc
//               IPsecESPTunnelEncap` for the others)
//   $KEY_OUT, $KEY_IN   hex: the encryption key followed by the integrity
//               key (CBC) or the 4-byte salt (GCM), as `ip xfrm` takes them
//
// Handlers: enc.* and dec.* (packets, bytes, seq, replay_drops,
// auth_failures, bad_padding, truncated, unknown_spi, not_esp, drops).
// The default keys are examples only.

define($PLAIN_IN plain-in.pcap, $PLAIN_OUT plain-out.pcap,
       $ESP_IN esp-in.pcap, $ESP_OUT esp-out.pcap,
       $LOCAL 192.0.2.1, $PEER 198.51.100.1,
       $SPI_OUT 0x1001, $SPI_IN 0x2002, $ALG aes128gcm16,
       $KEY_OUT 0x00112233445566778899aabbccddeeff01020304,
       $KEY_IN 0xffeeddccbbaa99887766554433221100a0b0c0d0);

// Stop once both input files are done.
DriverManager(pause 2, wait 0.1s, stop);

// Outbound: local site -> encrypt -> peer.
// BURST 32: batches of 32 packets (FromDump's default, 1, is Click's
// one packet per run: Click's order of side effects, at twice the cost).
FromDump($PLAIN_IN, STOP true, BURST 32)
  -> pc :: Classifier(12/0800, -)
  -> Strip(14)
  -> CheckIPHeader
  -> enc :: IPsecESPTunnelEncap($SPI_OUT, $ALG, $KEY_OUT, $LOCAL, $PEER)
  -> EtherEncap(0x0800, 02:00:00:00:00:01, 02:00:00:00:00:02)
  -> ToDump($ESP_OUT);
pc[1] -> Discard;

// Inbound: peer -> check, decrypt -> local site.
FromDump($ESP_IN, STOP true, BURST 32)
  -> ec :: Classifier(12/0800, -)
  -> Strip(14)
  -> CheckIPHeader
  -> esp :: IPClassifier(ip proto 50, -)
  -> dec :: IPsecESPTunnelUnencap($SPI_IN, $ALG, $KEY_IN, $PEER, $LOCAL)
  -> CheckIPHeader
  -> EtherEncap(0x0800, 02:00:00:00:00:01, 02:00:00:00:00:03)
  -> ToDump($PLAIN_OUT);
ec[1] -> Discard;
esp[1] -> Discard;

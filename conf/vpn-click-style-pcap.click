// vpn-click-style-pcap.click -- the ESP tunnel gateway of conf/vpn-pcap.click
// built from Click's split IPsec elements, as Click's IPsec configurations
// are: RadixIPsecLookup routes packets and picks their security association
// (from an IPsecSATable), and the transform is a chain of small steps.
//
// Outbound (local site -> tunnel):
//   rt[1] -> IPsecESPEncap -> IPsecAES(1) -> IPsecDES(1)
//         -> IPsecAuthHMACSHA1(0) -> IPsecAuthHMACSHA256(0) -> IPsecEncap -> rt
// Inbound (ESP to this gateway):
//   rt[0] -> StripIPHeader -> IPsecAuthHMACSHA1(1) -> IPsecAuthHMACSHA256(1)
//         -> IPsecAES(0) -> IPsecDES(0) -> IPsecESPUnencap -> rt
// Each cipher and HMAC element acts on the SAs of its algorithm and passes
// the others, so this one chain serves every $ALG; AES-GCM's integrity is
// IPsecAES's. See `paraclick doc RadixIPsecLookup` and `IPsecSATable`.
//
// Same parameters as conf/vpn-pcap.click, plus the two sites' networks:
//
//   paraclick conf/vpn-click-style-pcap.click PLAIN_IN=p.pcap PLAIN_OUT=po.pcap \
//       ESP_IN=e.pcap ESP_OUT=eo.pcap LOCAL=192.0.2.1 PEER=198.51.100.1 \
//       SPI_OUT=0x1001 SPI_IN=0x2002 ALG=aes128gcm16 KEY_OUT=0x... KEY_IN=0x... \
//       LOCAL_NET=10.1.0.0/16 REMOTE_NET=10.2.0.0/16 -h sat.table
//
// Handlers: sat.table (per SA: packets, bytes, seq, rx_seq, drops by
// reason), `sat.packets SPI` and the like, sat.unknown_spi.
// The default keys are examples only.

define($PLAIN_IN plain-in.pcap, $PLAIN_OUT plain-out.pcap,
       $ESP_IN esp-in.pcap, $ESP_OUT esp-out.pcap,
       $LOCAL 192.0.2.1, $PEER 198.51.100.1,
       $SPI_OUT 0x1001, $SPI_IN 0x2002, $ALG aes128gcm16,
       $KEY_OUT 0x00112233445566778899aabbccddeeff01020304,
       $KEY_IN 0xffeeddccbbaa99887766554433221100a0b0c0d0,
       $LOCAL_NET 10.1.0.0/16, $REMOTE_NET 10.2.0.0/16);

DriverManager(pause 2, wait 0.1s, stop);

// Outbound SA (to the peer) and inbound SA (from the peer).
sat :: IPsecSATable($SPI_OUT $ALG $KEY_OUT $LOCAL $PEER,
                    $SPI_IN $ALG $KEY_IN $PEER $LOCAL);

rt :: RadixIPsecLookup($LOCAL/32 0,                      // ESP to us
                       $REMOTE_NET $PEER 1 $SPI_OUT,     // into the tunnel
                       $LOCAL_NET 2,                     // the local site
                       $PEER/32 3);                      // the peer

// BURST 32: batches of 32 packets (FromDump's default, 1, is Click's
// one packet per run: Click's order of side effects, at twice the cost).
FromDump($PLAIN_IN, STOP true, BURST 32)
  -> pc :: Classifier(12/0800, -)
  -> Strip(14) -> CheckIPHeader -> rt;
pc[1] -> Discard;

FromDump($ESP_IN, STOP true, BURST 32)
  -> ec :: Classifier(12/0800, -)
  -> Strip(14) -> CheckIPHeader -> rt;
ec[1] -> Discard;

rt[0] -> StripIPHeader
      -> IPsecAuthHMACSHA1(1) -> IPsecAuthHMACSHA256(1)
      -> IPsecAES(0) -> IPsecDES(0)
      -> IPsecESPUnencap
      -> CheckIPHeader
      -> rt;

rt[1] -> IPsecESPEncap
      -> IPsecAES(1) -> IPsecDES(1)
      -> IPsecAuthHMACSHA1(0) -> IPsecAuthHMACSHA256(0)
      -> IPsecEncap(esp, TTL 64)
      -> rt;

rt[2] -> EtherEncap(0x0800, 02:00:00:00:00:01, 02:00:00:00:00:03) -> ToDump($PLAIN_OUT);
rt[3] -> EtherEncap(0x0800, 02:00:00:00:00:01, 02:00:00:00:00:02) -> ToDump($ESP_OUT);

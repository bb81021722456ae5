// iprouter-combo.click -- the two-interface IP router of iprouter-veth.click
// written with Click's combo elements, in the style of Click's
// router-vanilla configurations: IPInputCombo does Paint, Strip(14),
// CheckIPHeader and GetIPAddress(16); IPOutputCombo does DropBroadcasts,
// PaintTee, IPGWOptions, FixIPSrc, DecIPTTL and CheckLength(MTU). Its
// error outputs become ICMP errors; its too-long output (4) is
// fragmented.
//
//   paraclick check conf/iprouter-combo.click
//   paraclick conf/iprouter-combo.click DEV0=r0 DEV1=r1   (as root, in a netns)
//
// Interfaces (defaults):
//   $DEV0 r0  10.0.1.1/24  02:00:00:00:01:01  MTU 1500
//   $DEV1 r1  10.0.2.1/24  02:00:00:00:02:01  MTU 1500

define($DEV0 r0, $DEV1 r1, $MTU 1500, $SNIFFER false);

AddressInfo(if0 10.0.1.1/24 02:00:00:00:01:01,
            if1 10.0.2.1/24 02:00:00:00:02:01);

rt :: StaticIPLookup(10.0.1.1/32 0, 10.0.1.255/32 0,
                     10.0.2.1/32 0, 10.0.2.255/32 0,
                     255.255.255.255/32 0, 0.0.0.0/32 0,
                     10.0.1.0/24 1, 10.0.2.0/24 2);

rt[0] -> self :: IPClassifier(icmp type echo, -);
self[0] -> ICMPPingResponder -> rt;
self[1] -> tohost :: Discard;

// Input and output for one interface; the combos in the middle.
elementclass Interface { $dev, $if, $color |
  out :: Queue(1000) -> ToDevice($dev);
  c :: Classifier(12/0806 20/0001, 12/0806 20/0002, 12/0800, -);
  FromDevice($dev, SNIFFER $SNIFFER) -> c;
  arpq :: ARPQuerier($if) -> out;
  c[0] -> ARPResponder($if) -> out;
  c[1] -> [1]arpq;
  c[2] -> IPInputCombo($color, INTERFACES if0 if1) -> [0]output;
  c[3] -> Discard;

  input -> oc :: IPOutputCombo($color, $if, $MTU) -> [0]arpq;
  oc[1] -> ICMPError($if, redirect, host) -> [0]output;
  oc[2] -> ICMPError($if, parameterproblem) -> [0]output;
  oc[3] -> ICMPError($if, timeexceeded) -> [0]output;
  oc[4] -> fr :: IPFragmenter($MTU) -> [0]arpq;
  fr[1] -> ICMPError($if, unreachable, needfrag) -> [0]output;
}

i0 :: Interface($DEV0, if0, 1);
i1 :: Interface($DEV1, if1, 2);
i0 -> rt;
i1 -> rt;
rt[1] -> i0;
rt[2] -> i1;

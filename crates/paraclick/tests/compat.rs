//! Click compatibility of the command line and of configuration forms
//! Click accepts (issue 14).

mod common;
use common::paraclick;

fn write(dir: &tempfile::TempDir, name: &str, text: &str) -> String {
    let p = dir.path().join(name);
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn device_names_and_click_address_forms_are_accepted() {
    let dir = tempfile::tempdir().unwrap();
    let conf = write(
        &dir,
        "dev.click",
        "PollDevice(pcknodev0, METHOD LINUX) -> c :: Classifier(12/0806, -);
         c[0] -> ARPResponder(0/0 1:1:1:1:1:1, 10.0.0.1/32 10.0.0.2 00:01:02:03:04:05, lo)
              -> Discard;
         c[1] -> Strip(14) -> CheckIPHeader -> SetIPAddress(lo:bcast)
              -> q :: ARPQuerier(lo) -> EtherEncap(0x0800, lo, lo:eth) -> Discard;
         Idle -> [1]q;",
    );
    let out = paraclick(&["check", &conf]);
    assert!(out.status.success(), "{}", stderr(&out));

    let bad = write(
        &dir,
        "bad.click",
        "FromDevice(pcknodev0, METHOD SMOKE) -> Discard;",
    );
    let out = paraclick(&["check", &bad]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("METHOD"), "{}", stderr(&out));

    let bad = write(
        &dir,
        "bad2.click",
        "Idle -> SetIPAddress(nosuchdev7:gw) -> Discard;",
    );
    let out = paraclick(&["check", &bad]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("nosuchdev7:gw"), "{}", stderr(&out));
}

#[test]
fn click_command_options() {
    let dir = tempfile::tempdir().unwrap();
    let conf = write(
        &dir,
        "x.click",
        "c :: Counter;
         elementclass Two { input -> Counter -> output }
         InfiniteSource(LIMIT 5, STOP true) -> Two -> c -> Discard;",
    );
    // -x: the handler's value is the exit status.
    let out = paraclick(&["-x", "c.count", &conf]);
    assert_eq!(out.status.code(), Some(5), "{}", stderr(&out));
    // a boolean: true is 0, false is 1
    let b = write(
        &dir,
        "b.click",
        "s :: Script(export $v false); Idle -> Discard;",
    );
    let out = paraclick(&["-q", "-x", "s.v", &b]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let out = paraclick(&["-q", "-x", "nosuch.count", &conf]);
    assert_eq!(out.status.code(), Some(1));

    // -o: the flattened configuration, itself a valid configuration with
    // the same elements.
    let flat = dir.path().join("flat.click");
    let out = paraclick(&["-q", "-o", flat.to_str().unwrap(), &conf]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = std::fs::read_to_string(&flat).unwrap();
    assert!(text.contains("c :: Counter;"), "{text}");
    assert!(text.contains("/Counter@"), "{text}");
    assert!(!text.contains("elementclass"), "{text}");
    let out = paraclick(&["-x", "c.count", flat.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(5), "{}", stderr(&out));

    // -t prints the time taken; -w is accepted.
    let out = paraclick(&["-t", "-w", &conf]);
    assert!(out.status.success());
    assert!(stderr(&out).contains("s wall"), "{}", stderr(&out));

    // -w silences configuration warnings (a Message of TYPE WARNING, an
    // unsupported keyword), not errors.
    let w = write(
        &dir,
        "w.click",
        "Message(\"mind the gap\", WARNING);
         Idle -> a :: AggregateIPFlows -> ToIPFlowDumps(flows/%n, NOTIFIER a);",
    );
    let out = paraclick(&["-q", &w]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("warning: mind the gap"),
        "{}",
        stderr(&out)
    );
    assert!(
        stderr(&out).contains("warning: NOTIFIER"),
        "{}",
        stderr(&out)
    );
    let out = paraclick(&["-q", "-w", &w]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!stderr(&out).contains("warning"), "{}", stderr(&out));

    // -R (hot reconfiguration, tested in hotconfig.rs) is accepted.
    let out = paraclick(&["-q", "-R", &conf]);
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
fn undefined_variable_outside_compound_is_literal() {
    let dir = tempfile::tempdir().unwrap();
    let conf = write(
        &dir,
        "v.click",
        "InfiniteSource(DATA \"$notdefined\", LIMIT 1, STOP true) -> c :: Counter -> Discard;",
    );
    let out = paraclick(&["-x", "c.byte_count", &conf]);
    assert_eq!(out.status.code(), Some(11), "{}", stderr(&out));
}

#[test]
fn argument_errors_reported_with_unknown_classes() {
    let out = paraclick(&[
        "check",
        "-e",
        "Foo -> Discard; Idle -> Counter(BAD 1) -> Discard; Idle -> Queue(xx) -> Foo",
    ]);
    assert!(!out.status.success());
    let e = stderr(&out);
    assert!(e.contains("undeclared element 'Foo'"), "{e}");
    assert!(e.contains("Counter: unknown keyword BAD"), "{e}");
    assert!(e.contains("Queue: CAPACITY"), "{e}");
}

/// Forms from Click's and FastClick's sample configurations (conf/) that
/// Click's click-check accepts, in small configurations of our own.
#[test]
fn click_sample_configuration_forms_check() {
    let dir = tempfile::tempdir().unwrap();
    let ok = [
        // IP6Print's NBYTES and CONTENTS (ip6print.click)
        "Idle -> IP6Print(v6, NBYTES 512, CONTENTS true) -> Discard;",
        // FastClick's DEVNAME spelling (tutorial-01.click)
        "Idle -> tap :: KernelTap(10.100.0.1/24, DEVNAME vEth1) -> Discard;",
        // RadixIPsecLookup's inline SA (ipsec-router.click)
        "rt :: RadixIPsecLookup(10.0.0.1/32 0, 10.9.0.0/16 10.0.0.2 1 234 \
           ABCDEFFF001DEFD2354550FE40CD708E 112233EE556677888877665544332211 300 64, 10.0.0.0/8 2);
         Idle -> rt; rt[2] -> Discard;
         rt[0] -> StripIPHeader -> IPsecAES(0) -> IPsecAuthHMACSHA1(1) -> IPsecESPUnencap -> Discard;
         rt[1] -> IPsecESPEncap -> IPsecAuthHMACSHA1(0) -> IPsecAES(1) -> IPsecEncap(50) -> Discard;",
        // SchedOrderTest (schedorder1.click)
        "s1 :: SchedOrderTest(1, SIZE 100, STOP true); ScheduleInfo(s1 1);",
        // an interface this host lacks, as an Ethernet address (fromhost-tunnel.click)
        "Idle -> aq :: ARPQuerier(10.0.0.1, nosuchdev8) -> Discard; Idle -> [1]aq;",
        // a library defining a class with parameters it never declares
        // and never using it (FastClick's ids/includes/dummy_firewall_in.click)
        "elementclass Fw { input -> EtherEncap(0x0800, $macAddr1, $gwMACAddr0) -> output }",
        // the IPv6/IPv4 translation gateway (ip64-nat*.click)
        "at :: AddressTranslator(0, 1, 1, 0, ::1.0.0.1 6000 6010);
         Idle -> [0]at[0] -> ProtocolTranslator64 -> Discard;
         Idle -> ProtocolTranslator46 -> [1]at[1] -> Discard;
         at2 :: AddressTranslator(1, 0, 3ffe:1ce1:2::1 ::18.26.4.17, 0);
         Idle -> [0]at2[0] -> Discard; Idle -> [1]at2[1] -> Discard;",
    ];
    for (i, text) in ok.iter().enumerate() {
        let conf = write(&dir, &format!("ok{i}.click"), text);
        let out = paraclick(&["check", &conf]);
        assert!(out.status.success(), "{text}: {}", stderr(&out));
    }
    // Running (configuring for real) the missing interface is a clear error.
    let conf = write(&dir, "aq.click", ok[4]);
    let out = paraclick(&["-q", &conf]);
    assert!(!out.status.success());
    let e = stderr(&out);
    assert!(e.contains("no network interface 'nosuchdev8'"), "{e}");
    // Using the class with undeclared parameters is an error.
    let conf = write(
        &dir,
        "fw.click",
        &format!("{}\nIdle -> Fw -> Discard;", ok[5]),
    );
    let out = paraclick(&["check", &conf]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("unknown parameter '$macAddr1'"));
    // SchedOrderTest runs and reports the order.
    let conf = write(
        &dir,
        "so.click",
        "s1 :: SchedOrderTest(1, SIZE 20, STOP true); s2 :: SchedOrderTest(2, LIMIT 3);",
    );
    let out = paraclick(&["-h", "s1.order", &conf]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let ids: Vec<&str> = text
        .lines()
        .filter(|l| !l.ends_with(':') && !l.is_empty())
        .flat_map(|l| l.split_whitespace())
        .collect();
    assert_eq!(ids.len(), 20, "{text}");
    assert_eq!(ids.iter().filter(|&&i| i == "2").count(), 3, "{text}");
}

fn stdout(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn flatten_prints_clicks_flattened_form() {
    // Click's tools/lexer-06 B.click: a compound, an element group and
    // ports other than 0. Real Click prints this (its anonymous Paint
    // has another number).
    let conf = "analyzer, x1, x2 :: Idle;
x1 -> analyzer -> x2;
c :: Idle =>
         [1] analyzer [1],
         foo :: { -> c2 :: Idle => (->), Paint(1) -> }
-> post_classification :: Idle;
";
    let out = paraclick(&["flatten", "-e", conf]);
    assert!(out.status.success(), "{}", stderr(&out));
    let want = "analyzer :: Idle;\nx1 :: Idle;\nx2 :: Idle;\nc :: Idle;\n\
                post_classification :: Idle;\nfoo/c2 :: Idle;\nfoo/Paint@2 :: Paint(1);\n\n\
                x1 -> analyzer\n    -> x2;\nc -> [1] analyzer;\n\
                analyzer [1] -> post_classification;\n\
                c [1] -> foo/c2\n    -> post_classification;\n\
                foo/c2 [1] -> foo/Paint@2\n    -> post_classification;\n";
    assert_eq!(stdout(&out), want);
    // -o writes the same text, before the router is built.
    let out = paraclick(&["-q", "-o", "-", "-e", conf]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), want);

    // Classes paraclick lacks are kept; nothing is configured; -o FILE.
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("flat.click").display().to_string();
    let out = paraclick(&[
        "flatten",
        "-o",
        &f,
        "-e",
        "elementclass W { $x | input -> NoSuch($x) -> output } Idle -> W(\"\\\\\") -> Discard",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "");
    assert_eq!(
        std::fs::read_to_string(&f).unwrap(),
        "Idle@1 :: Idle;\nDiscard@3 :: Discard;\nW@2/NoSuch@1 :: NoSuch(\"\\\\\");\n\n\
         Idle@1 -> W@2/NoSuch@1\n    -> Discard@3;\n"
    );
}

#[test]
fn align_output_runs_as_click_align_and_click_pipe_it() {
    // As Click's userlevel/iprouter-01 does: `click-align CONF | click`.
    let conf = "InfiniteSource(LIMIT 5, STOP true) -> n :: Counter -> c :: Classifier(12/0800, -) \
                -> Strip(14) -> CheckIPHeader -> Discard; c[1] -> Discard;";
    let dir = tempfile::tempdir().unwrap();
    let f = write(&dir, "a.click", conf);
    let out = common::with_stdin(&["align"], conf);
    assert!(out.status.success(), "{}", stderr(&out));
    let aligned = stdout(&out);
    assert!(
        aligned.contains("InfiniteSource@1 -> Align@click_align@"),
        "{aligned}"
    );
    assert!(aligned.contains("AlignmentInfo(c  4 2,\n"), "{aligned}");
    // FILE and -o FILE give the same text.
    let o = dir.path().join("out.click").display().to_string();
    let out = paraclick(&["align", "-o", &o, &f]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(std::fs::read_to_string(&o).unwrap(), aligned);
    let out = common::with_stdin(&["-h", "n.count"], &aligned);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), "5");
    // An argument the analysis must read and cannot: a clear error.
    let out = paraclick(&["align", "-e", "x :: X -> a :: Align(4, 9) -> Discard"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(stdout(&out), "");
    assert!(
        stderr(&out).contains("a :: Align: '4, 9' is not MODULUS, OFFSET"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn flatten_reports_errors_as_click_words_them() {
    // Click's tools/lexer-04 and lexer-09 expect these lines from
    // click-flatten and from click alike.
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            "A.click",
            "->Null;\n",
            "A.click:1: syntax error near '->'\n",
        ),
        (
            "C.click",
            "a, b, c, d :: Idle;\na [0,1] => [0,1,2] b;\nc [] => [] d;\n",
            "C.click:2: connection mismatch: 2 outputs connected to 3 inputs\n\
             C.click:3: at most one expandable port allowed per connection\n",
        ),
        (
            "C2.click",
            "a, b, c, d :: Idle;\na [0,1,2] -> [0,1,2] b;\n",
            "C2.click:2: syntax error: many-to-many connections require '=>'\n",
        ),
        // Click's tools/lexer-01: a name used as a class, in a compound
        // too, names no element after (once per declaration).
        (
            "L1.click",
            "elementclass Foo {\n   A -> B;\n}\nA :: Idle;\n",
            "L1.click:4: class 'A' used as element name\n",
        ),
        (
            "L2.click",
            "elementclass Foo {\n   A :: A -> B;\n}\nA :: Idle;\n",
            "L2.click:2: class 'A' used as element name\n\
             L2.click:4: class 'A' used as element name\n",
        ),
    ];
    for (name, text, want) in cases {
        let f = write(&dir, name, text);
        for args in [
            vec!["flatten", "--errors", "click", f.as_str()],
            vec!["--errors", "click", "-q", "-o", "-", f.as_str()],
        ] {
            let out = paraclick(&args);
            assert_eq!(out.status.code(), Some(1), "{args:?}");
            assert_eq!(stdout(&out), "", "{args:?}");
            assert_eq!(
                stderr(&out).replace(&format!("{}/", dir.path().display()), ""),
                want,
                "{args:?}"
            );
        }
    }
}

#[test]
fn xform_replaces_patterns_as_click_xform_does() {
    let dir = tempfile::tempdir().unwrap();
    let pats = write(
        &dir,
        "q.clickpat",
        "elementclass Q { input -> Queue($n) -> output; }
         elementclass Q_Replacement { input -> Queue($n) -> Shaper(200) -> output; }",
    );
    let conf = "Idle -> q :: Queue(5) -> Discard;";
    let want = "Idle@1 :: Idle;\nDiscard@3 :: Discard;\nq :: Queue(5);\n\
                Q@1/Shaper@2 :: Shaper(200);\n\nIdle@1 -> q\n    -> Q@1/Shaper@2\n    -> Discard@3;\n";
    let out = paraclick(&["xform", "-p", &pats, "-e", conf]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), want);
    // Click's order: ROUTER-FILE then PATTERN-FILEs; -o FILE.
    let r = write(&dir, "r.click", conf);
    let o = dir.path().join("o.click").display().to_string();
    let out = paraclick(&["xform", &r, &pats, "-o", &o]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(std::fs::read_to_string(&o).unwrap(), want);
    // Backwards, the Shaper goes again.
    let out = paraclick(&["xform", "-r", "-p", &pats, &o]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!stdout(&out).contains("Shaper"), "{}", stdout(&out));
    assert!(stdout(&out).contains(":: Queue(5);"), "{}", stdout(&out));

    // No pattern file; a bad one, reported located.
    let out = paraclick(&["xform", "-e", conf]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("no pattern files"),
        "{}",
        stderr(&out)
    );
    let bad = write(
        &dir,
        "bad.clickpat",
        "elementclass Q { input -> Queue -> output; }\n",
    );
    let out = paraclick(&["xform", "--errors", "click", "-p", &bad, "-e", conf]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(stdout(&out), "");
    assert!(
        stderr(&out)
            .contains("bad.clickpat:1: pattern 'Q' has no replacement: define 'Q_Replacement'"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn xform_ip_patterns_give_a_router_that_forwards_the_same() {
    // conf/xform-ip.clickpat folds the IP paths into Click's combination
    // elements; the result must configure and forward what the original
    // does.
    let root = common::root();
    let pats = root.join("conf/xform-ip.clickpat").display().to_string();
    let conf = root.join("conf/fake-iprouter.click").display().to_string();
    let out = paraclick(&["xform", "-p", &pats, &conf, "N=2000"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    for want in [
        "OutputPath@1/out :: IPOutputCombo(1, eth0, 1500);",
        "OutputPath@2/out :: IPOutputCombo(2, eth1, 1500);",
        "p0/fr :: IPFragmenter(1500);",
        "SharedInputPath@1/IPInputCombo@1 :: IPInputCombo(1, INTERFACES 1.0.0.1/8 2.0.0.1/8);",
        "InputPath@1/IPInputCombo@1 :: IPInputCombo(2, INTERFACES 1.0.0.1/8 2.0.0.1/8);",
    ] {
        assert!(text.contains(want), "{want}\n{text}");
    }
    for gone in [
        "DropBroadcasts",
        "PaintTee",
        "GetIPAddress",
        "Strip(",
        ":: Paint(",
    ] {
        assert!(!text.contains(gone), "{gone}\n{text}");
    }
    let dir = tempfile::tempdir().unwrap();
    let x = write(&dir, "x.click", &text);
    let run = |args: &[&str]| stdout(&paraclick(args));
    let counts = ["-h", "out0.count", "-h", "out1.count"];
    let a = run(&[&[conf.as_str(), "N=2000"][..], &counts[..]].concat());
    let b = run(&[&[x.as_str()][..], &counts[..]].concat());
    assert!(a.contains("2000"), "{a}");
    assert_eq!(a, b);
}

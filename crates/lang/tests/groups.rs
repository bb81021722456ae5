//! Element groups `( ... )`: detours inside a connection, expanded at
//! parse time in the enclosing scope (Click's language, "Element groups").

mod common;
use common::*;

/// Every written form of "x -> y" gives the one connection.
#[test]
fn equivalent_forms_of_a_plain_connection() {
    for text in [
        "x :: X; y :: Y; x -> y;",
        "x :: X; y :: Y; x -> ( input -> output ) -> y;",
        "x :: X; y :: Y; x -> ( [0] -> [0] ) -> y;",
        "x :: X; y :: Y; x -> (->) -> y;",
        "x :: X; y :: Y; x -> ( [0]->[0]; [1]->[1] ) => ( [0]->[0]; [1]->[1] ) -> y;",
    ] {
        let g = parse(text);
        assert_eq!(names(&g), ["x", "y"], "{text}");
        let mut c = conns(&g);
        c.dedup();
        assert_eq!(c, s(&["x[0] -> [0]y"]), "{text}");
    }
}

#[test]
fn a_detour_keeps_the_path_linear() {
    let g = parse(
        "x :: X; y :: Y;\n\
         x -> c :: Classifier(00/01, -) => (\n\
             input [0] -> output;\n\
             input [1] -> p :: Paint(1) -> output\n\
         ) -> y;",
    );
    assert_eq!(
        conns(&g),
        s(&[
            "x[0] -> [0]c",
            "c[0] -> [0]y",
            "c[1] -> [0]p",
            "p[0] -> [0]y",
        ])
    );
}

/// A group's ports are all its ports, in order, unless given; `=>`
/// pairs them with the neighbour's.
#[test]
fn implicit_and_explicit_group_ports() {
    let two = "( [0] -> a :: A -> [0]; [1] -> [1] )";
    let g = parse(&format!("s :: S; r :: R; s => {two} => r;"));
    assert_eq!(
        conns(&g),
        s(&["s[0] -> [0]a", "a[0] -> [0]r", "s[1] -> [1]r"])
    );
    let g = parse(&format!("s :: S; r :: R; s => [0,1] {two} [0,1] -> r;"));
    assert_eq!(
        conns(&g),
        s(&["s[0] -> [0]a", "a[0] -> [0]r", "s[1] -> [0]r"])
    );
    // A group with outputs only starts a connection.
    let g = parse("( A -> [0]; B -> [0]; Idle -> [1]; ) => q :: Q -> D;");
    assert_eq!(
        conns(&g),
        s(&[
            "A@1[0] -> [0]q",
            "B@2[0] -> [0]q",
            "Idle@3[0] -> [1]q",
            "q[0] -> [0]D@5"
        ])
    );
}

/// A group makes no scope: names declared inside are used outside and
/// the other way round; nested groups work.
#[test]
fn groups_share_the_enclosing_scope() {
    let g = parse(
        "x :: X; y :: Y;\n\
         x -> ( [0] -> inner :: Counter -> ( [0] -> y2 :: Z -> [0] ) -> [0] ) -> y;\n\
         inner2 :: W; y2 -> inner2;",
    );
    assert_eq!(names(&g), ["x", "y", "inner", "y2", "inner2"]);
    assert_eq!(
        conns(&g),
        s(&[
            "x[0] -> [0]inner",
            "inner[0] -> [0]y2",
            "y2[0] -> [0]y",
            "y2[0] -> [0]inner2",
        ])
    );
    // In a compound, the group's input is the group's, not the compound's.
    let g = parse(
        "elementclass C { input -> ( input -> m :: M -> output ) -> output }\n\
         a :: A; b :: B; a -> C -> b;",
    );
    assert_eq!(conns(&g), s(&["a[0] -> [0]C@3/m", "C@3/m[0] -> [0]b"]));
}

#[test]
fn group_port_errors() {
    // A port connected inside but not outside, or nonsequential ports.
    assert_eq!(
        error("x :: X; y :: Y; x => [0] ( [0]->[0]; [1]->Idle ) -> y;"),
        "r.click:1:22: element group input 1 is not connected outside the group"
    );
    assert_eq!(
        error("x :: X; y :: Y; x => ( [0]->[0]; [2]->Idle ) -> y;"),
        "r.click:1:22: element group input 1 is not used inside the group (its ports must be sequential)"
    );
    assert_eq!(
        error("x :: X; x -> ( [0] -> input ) -> x;"),
        "r.click:1:16: cannot connect to 'input': inside an element group, 'input' only has outputs"
    );
    assert_eq!(
        error("x :: X -> ( [0] -> Y"),
        "r.click:1:11: unterminated element group: missing ')'"
    );
}

//! Script and DriverManager share one instruction language: variables,
//! `$x`, and Click's expression functions.

mod common;
use common::paraclick;

fn stdout_of(conf: &str) -> String {
    let out = paraclick(&["-e", conf]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

const PROGRAM: &str = "set x 5, set y $(add $x 2), print \"$x $y $(sub $y 10) $(mul $x $y) $(min 4 $x 2) $(max $x 9) $(htons 1) $(if $(lt $x $y) yes no) $(sprintf %03d $x)\"";

#[test]
fn driver_manager_and_script_evaluate_the_same_program() {
    let expected = "5 7 -3 35 2 9 256 yes 005\n";
    let dm = stdout_of(&format!("DriverManager({PROGRAM}, stop)"));
    assert_eq!(dm, expected);
    let sc = stdout_of(&format!("Script({PROGRAM}, stop)"));
    assert_eq!(sc, expected);
}

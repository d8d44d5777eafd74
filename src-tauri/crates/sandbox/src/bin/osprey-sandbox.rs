//! `osprey-sandbox`: the launcher Osprey starts instead of an app's binary or `bash` for a shell
//! command. It confines itself as the policy in its arguments says, then execs the program (see
//! `osprey_sandbox`). Not meant to be run by hand.

fn main() -> std::process::ExitCode {
    osprey_sandbox::launcher_main()
}

//! `osprey-app-sandbox`: the launcher the app runtime starts instead of an app's binary. It
//! confines itself as the policy in its arguments says, then execs the app (see
//! `osprey_apps::sandbox`). Not meant to be run by hand.

fn main() -> std::process::ExitCode {
    osprey_apps::sandbox::launcher_main()
}

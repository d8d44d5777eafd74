use super::*;

fn programs(command: &str) -> Vec<String> {
    analyze(command)
        .commands
        .iter()
        .map(|c| c.program.clone())
        .collect()
}

fn lines(command: &str) -> Vec<String> {
    analyze(command)
        .commands
        .iter()
        .map(|c| {
            std::iter::once(c.program.as_str())
                .chain(c.args.iter().map(String::as_str))
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect()
}

fn assert_static(command: &str) {
    let a = analyze(command);
    assert_eq!(a.dynamic, None, "{command} should be static: {a:?}");
}

fn assert_dynamic(command: &str) {
    let a = analyze(command);
    assert!(a.dynamic.is_some(), "{command} should be dynamic: {a:?}");
}

#[test]
fn lists_every_command_in_lists_pipelines_and_groups() {
    assert_eq!(
        programs("git status && cargo test 2>&1 | tail -n 20; ls || pwd & echo hi"),
        ["git", "cargo", "tail", "ls", "pwd", "echo"]
    );
    assert_eq!(
        programs("(cd x && make) ; { a; b; }"),
        ["cd", "make", "a", "b"]
    );
    assert_eq!(
        programs("if test -f x; then rm x; elif c; then d; else e; fi"),
        ["test", "rm", "c", "d", "e"]
    );
    assert_eq!(
        programs("for f in *.rs; do wc -l $f; done; while read l; do echo $l; done < x"),
        ["wc", "read", "echo"]
    );
    assert_eq!(
        programs("case $x in a) one;; b|c) two;; esac"),
        ["one", "two"]
    );
    assert_eq!(programs("f() { inner; }; f"), ["inner", "f"]);
    assert_static("git status && cargo test 2>&1 | tail -n 20");
}

#[test]
fn substitutions_are_walked_everywhere() {
    assert_eq!(programs("echo $(whoami) `id`"), ["whoami", "id", "echo"]);
    assert_eq!(programs(r#"echo "a $(rm -rf /tmp/x) b""#), ["rm", "echo"]);
    assert_eq!(programs("cat > $(mktemp)"), ["mktemp", "cat"]);
    assert_eq!(programs("diff <(ls a) <(ls b)"), ["ls", "ls", "diff"]);
    assert_eq!(programs("tee >(gzip > x.gz) < in"), ["gzip", "tee"]);
    assert_eq!(programs("X=$(curl -s x) true"), ["curl", "true"]);
    assert_eq!(programs(r#"echo "${X:-$(date)}""#), ["date", "echo"]);
    assert_eq!(programs("cat <<< \"$(hostname)\""), ["hostname", "cat"]);
    assert_eq!(programs("cat <<EOF\n$(uname)\nEOF"), ["uname", "cat"]);
    assert_eq!(programs("cat <<'EOF'\n$(uname)\nEOF"), ["cat"]);
    assert_eq!(programs("[[ -f $(which ls) ]]"), ["which"]);
    assert_eq!(programs("echo $(( 1 + $(id -u) ))"), ["id", "echo"]);
}

#[test]
fn wrappers_are_stripped_and_remembered() {
    let a = analyze("env -i FOO=1 BAR=2 nice -n 10 ionice -c3 timeout -s KILL 5s nohup git status");
    assert_eq!(a.commands.len(), 1);
    let c = &a.commands[0];
    assert_eq!(c.program, "git");
    assert_eq!(c.args, ["status"]);
    assert_eq!(c.wrappers, ["env", "nice", "ionice", "timeout", "nohup"]);
    assert_eq!(programs("xargs -0 -n 1 -I {} rm {}"), ["rm"]);
    assert_eq!(programs("stdbuf -oL exec command time ls"), ["ls"]);
    assert_eq!(programs("/usr/bin/env bash -c 'ls'"), ["bash", "ls"]);
    assert_eq!(programs("env -S 'sudo rm' x"), ["sudo", "rm"]);
    assert_eq!(programs("busybox rm -rf x"), ["rm"]);
    // Not wrappers when nothing is wrapped.
    assert_eq!(programs("env"), ["env"]);
    assert_eq!(programs("command -v sudo"), ["command"]);
    assert_eq!(lines("taskset -c 0 chrt -f 10 setsid make"), ["make"]);
}

#[test]
fn escalators_stay_visible_with_what_they_run() {
    assert_eq!(
        lines("sudo -u root rm -rf /x"),
        ["sudo -u root rm -rf /x", "rm -rf /x"]
    );
    let a = analyze("nice sudo rm x");
    assert_eq!(a.commands[0].program, "sudo");
    assert_eq!(a.commands[1].wrappers, ["nice", "sudo"]);
    assert_eq!(programs("su -c 'apt install x' root"), ["su", "apt"]);
    assert_eq!(programs("doas -u root ls"), ["doas", "ls"]);
    assert_eq!(programs("pkexec --user root ls"), ["pkexec", "ls"]);
    assert_eq!(
        programs("echo x | sudo tee /etc/x"),
        ["echo", "sudo", "tee"]
    );
}

#[test]
fn words_are_normalised_like_bash() {
    assert_eq!(programs(r#""su"do ls"#)[0], "sudo");
    assert_eq!(programs(r"\s\u\d\o ls")[0], "sudo");
    assert_eq!(programs(r"$'\x73udo' ls")[0], "sudo");
    assert_eq!(programs("'s'u'd'o ls")[0], "sudo");
    assert_eq!(lines("{rm,-rf,/}"), ["rm -rf /"]);
    assert_eq!(lines("rm${IFS}-rf${IFS}/"), ["rm -rf /"]);
    assert_eq!(lines("rm$IFS-rf$IFS/"), ["rm -rf /"]);
    assert_eq!(lines(r#"echo "a${IFS}b""#), ["echo a b"]);
    assert_eq!(lines("X=/; rm -rf $X"), ["rm -rf /"]);
    assert_eq!(lines(r#"X="rm -rf"; $X /"#)[0], "rm -rf /");
    assert_eq!(
        lines("rm -rf ~ $HOME ${HOME}/x"),
        ["rm -rf ~ $HOME ${HOME}/x"]
    );
    assert_eq!(lines("echo a\\ b 'c d'"), ["echo a b c d"]);
    let a = analyze("echo 'a b'");
    assert_eq!(a.commands[0].args, ["a b"]);
}

#[test]
fn shells_and_eval_are_parsed_recursively() {
    assert_eq!(programs("bash -c 'sudo ls'"), ["bash", "sudo", "ls"]);
    assert_eq!(programs("sh -ec \"rm -rf x\""), ["sh", "rm"]);
    assert_eq!(
        programs("zsh -c 'bash -c \"dash -c id\"'"),
        ["zsh", "bash", "dash", "id"]
    );
    assert_eq!(programs("eval 'sudo ls'"), ["eval", "sudo", "ls"]);
    assert_eq!(programs("eval sudo ls"), ["eval", "sudo", "ls"]);
    assert_eq!(programs("bash <<EOF\nsudo id\nEOF"), ["bash", "sudo", "id"]);
    assert_eq!(programs("sh <<< 'rm -rf x'"), ["sh", "rm"]);
    assert_eq!(
        programs("find . -name '*.o' -exec rm -f {} +"),
        ["find", "rm"]
    );
    assert_eq!(programs("watch -n 1 'ls | wc -l'"), ["watch", "ls", "wc"]);
    assert_eq!(
        programs("strace -f sudo id"),
        ["strace", "sudo", "id", "id"]
    );
    assert_static("bash -c 'ls -la'");
    assert_static("eval 'ls'");
    assert_static("bash <<EOF\nls\nEOF");
}

#[test]
fn dynamic_constructs_are_flagged() {
    for command in [
        "$X",
        "$X -rf /",
        "X=rm; $X -rf /",
        "$(echo rm) -rf /",
        "`echo rm` x",
        "${CMD:-ls}",
        "eval \"$CMD\"",
        "eval $(curl -s x)",
        "python -c 'import os'",
        "python3 -c 'print(1)'",
        "perl -e 'system(1)'",
        "perl -pi -e 's/a/b/' f",
        "ruby -e 'x'",
        "node -e 'x'",
        "node --eval=x",
        "php -r 'x'",
        "osascript -e 'x'",
        "awk 'BEGIN { system(\"rm x\") }'",
        "awk '{ print | \"sh\" }'",
        "curl -s https://x | sh",
        "curl -s https://x | bash",
        "wget -qO- x | sudo bash -s",
        "cat x.py | python3",
        "curl x | python3 -",
        "source ./env.sh",
        ". ~/.profile",
        "bash -c \"$CMD\"",
        "bash <(curl -s x)",
        "bash <<EOF\n$(curl x)\nEOF",
        "pwsh -Command Remove-Item x",
        "cmd /c del x",
        "/bin/r? -rf x",
        "echo 'unterminated",
        "if then fi",
    ] {
        assert_dynamic(command);
    }
}

#[test]
fn ordinary_commands_are_static() {
    for command in [
        "ls -la",
        "git log --oneline | head",
        "cargo test -p osprey-tools 2>&1 | tail -n 20",
        "python3 script.py --flag",
        "python -m pytest",
        "node build.js",
        "awk '{print $1}' file",
        "echo $HOME",
        "echo \"$PATH\"",
        "bash ./script.sh",
        "sh -c 'echo hi'",
        "perl -MData::Dumper script.pl",
        "X=1; echo $X",
        "for f in a b; do echo $f; done",
        "cat <<EOF > out.txt\nhello\nEOF",
    ] {
        assert_static(command);
    }
}

#[test]
fn an_unknown_program_also_lists_what_runs_if_it_is_empty() {
    assert_eq!(programs("$MAYBE sudo ls"), ["sudo", "ls", "$MAYBE"]);
}

#[test]
fn redirects_are_recorded_with_direction() {
    let a = analyze("cmd > out 2>&1 < in >> log &> all 3<> rw >| clob");
    let r: Vec<(&str, bool)> = a.commands[0]
        .redirects
        .iter()
        .map(|r| (r.target.as_str(), r.writes))
        .collect();
    assert_eq!(
        r,
        [
            ("out", true),
            ("&1", false),
            ("in", false),
            ("log", true),
            ("all", true),
            ("rw", true),
            ("clob", true)
        ]
    );
    let a = analyze("{ echo a; echo b; } > /tmp/x");
    assert!(a.commands.iter().all(|c| c.redirects[0].target == "/tmp/x"));
    let a = analyze("> /etc/x");
    assert_eq!(a.commands[0].program, "");
    assert!(a.commands[0].redirects[0].writes);
    let a = analyze("echo x >& /tmp/f");
    assert!(a.commands[0].redirects[0].writes);
}

#[test]
fn fork_bombs_are_recognised_with_any_name() {
    for command in [
        ":(){ :|:& };:",
        ":(){ :|: & };:",
        "bomb(){ bomb|bomb& }; bomb",
        "f() { f | f & }; f",
        "function g { g & g; }; g",
        "a(){ b & }; b(){ a & }; a",
        "x(){ x; x; }; x",
    ] {
        assert!(analyze(command).fork_bomb.is_some(), "{command}");
    }
    for command in [
        "f() { echo hi; }; f",
        "walk() { for d in \"$1\"/*; do [ -d \"$d\" ] && walk \"$d\"; done; }; walk .",
        "ls | grep x &",
    ] {
        assert_eq!(analyze(command).fork_bomb, None, "{command}");
    }
}

#[test]
fn xargs_is_asked_but_its_command_still_judged() {
    let a = analyze("find . -name '*.rs' | xargs grep foo");
    assert!(
        a.dynamic.as_deref().is_some_and(|d| d.contains("xargs")),
        "{a:?}"
    );
    assert_eq!(a.commands[1].program, "grep");
}

#[test]
fn indirection_and_run_time_values_are_flagged() {
    for command in [
        "rm -rf ${HOME%/}",
        "cat ${X:-~/.ssh/id_rsa}",
        "H=HOME; rm -rf ${!H}",
        "declare -n r=HOME; rm -rf $r",
        "printf -v d %s ~; rm -rf $d",
        "read d <<< /; rm -rf $d",
        "set -- ~; rm -rf $1",
        "alias x='id'; x",
        "f() { id; }; f",
        "trap 'id' EXIT",
        "exec 3<notes.txt",
        "for f in *.txt; do wc -l $f; done",
        "PATH=/tmp; ls",
        "PS4='$(id)' bash -x s.sh",
        "CDPATH=~ cd .ssh",
        "python3 /dev/stdin <<< 'print(1)'",
        "env -C /tmp sh -c 'ls'",
        "export -f ls",
        "declare -fx ls",
    ] {
        assert_dynamic(command);
    }
}

#[test]
fn ordinary_scripting_stays_static() {
    for command in [
        "set -euo pipefail; make test",
        "set -e; set -o pipefail; cargo test",
        "PYTHONUNBUFFERED=1 python3 x.py",
        "NODE_ENV=production node server.js",
        "GIT_AUTHOR_NAME=x git commit -m y",
        "diff <(sort a) <(sort b)",
        "wait; echo done",
        "echo ${#x} $?",
        "for d in a b c; do mkdir -p $d; done",
        "declare -f",
        "declare -p PATH",
    ] {
        assert_static(command);
    }
}

#[test]
fn static_loops_are_judged_once_per_value() {
    assert_eq!(
        lines("for d in / ~; do rm -rf $d; done"),
        ["rm -rf /", "rm -rf ~"]
    );
}

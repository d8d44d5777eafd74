//! The rules, one function per class of harm. Each judges one simple command.

use std::path::Path;

use super::{Blocked, Check};
use crate::security::shell_syntax::{ESCALATORS, program_name};

pub(super) fn check(c: &Check<'_>) -> Result<(), Blocked> {
    let name = c.name();
    let args = c.args();
    output_options(c, &name, args)?;
    escalation(&name, args)?;
    disks(&name, args)?;
    power(&name, args)?;
    kill_all(c, &name, args)?;
    system_state(c, &name, args)?;
    network(&name, args)?;
    windows(c, &name, args)?;
    for redirect in &c.command.redirects {
        if redirect.writes {
            c.write(&redirect.target)?;
        }
    }
    let each_write = |list: Vec<String>| list.iter().try_for_each(|a| c.write(a));
    match name.as_str() {
        "rm" | "rmdir" | "unlink" => remove(c, &name, args),
        "shred" | "wipe" | "srm" => each_write(operands(args, &[])),
        "find" => find(c, args),
        "dd" => args
            .iter()
            .filter_map(|a| a.strip_prefix("of="))
            .try_for_each(|target| c.write(target)),
        "ddrescue" | "dd_rescue" => each_write(operands(args, &[]).into_iter().skip(1).collect()),
        "mv" => {
            let (sources, dest) = copy_targets(args, COPY_VALUES);
            for source in &sources {
                c.delete(source, true)?;
            }
            write_into(c, &sources, dest.as_deref())
        }
        "cp" | "install" | "rsync" | "scp" | "ditto" | "rcp" => {
            let values: &[&str] = match name.as_str() {
                "install" => INSTALL_VALUES,
                "rsync" => RSYNC_VALUES,
                "scp" => SCP_VALUES,
                _ => COPY_VALUES,
            };
            if name == "install" && args.iter().any(|a| a == "-d" || a == "--directory") {
                return each_write(operands(args, values));
            }
            let (sources, dest) = copy_targets(args, values);
            let short = |letter: char| {
                args.iter()
                    .any(|a| a.starts_with('-') && !a.starts_with("--") && a.contains(letter))
            };
            if name == "cp"
                && (short('s')
                    || short('l')
                    || args.iter().any(|a| a == "--symbolic-link" || a == "--link"))
            {
                links_to(c, &sources);
            }
            if name == "rsync"
                && args.iter().any(|a| a.starts_with("--delete"))
                && let Some(dest) = dest.as_deref().filter(|d| !is_remote(d))
            {
                // `rsync -a --delete empty/ ~/` deletes what the destination holds.
                c.delete(dest, true)?;
            }
            if name == "rsync" && args.iter().any(|a| a == "--remove-source-files") {
                for source in sources.iter().filter(|s| !is_remote(s)) {
                    c.delete(source, true)?;
                }
            }
            let recursive = name == "rsync"
                || short('r')
                || short('R')
                || (name == "cp" && short('a'))
                || args.iter().any(|a| a == "--recursive" || a == "--archive");
            match dest {
                // `host:path` is another machine's path.
                Some(d) if is_remote(&d) => Ok(()),
                dest => {
                    if recursive && let Some(dest) = dest.as_deref() {
                        into_protected_tree(c, dest);
                    }
                    write_into(c, &sources, dest.as_deref())
                }
            }
        }
        "ln" | "link" => {
            let (sources, dest) = copy_targets(args, COPY_VALUES);
            links_to(c, &sources);
            write_into(c, &sources, dest.as_deref())
        }
        "tee" | "sponge" => each_write(operands(args, &[])),
        // `script FILE` records the session into FILE.
        "script" => each_write(
            operands(
                args,
                &[
                    "-c",
                    "--command",
                    "-E",
                    "--echo",
                    "-I",
                    "--log-in",
                    "-O",
                    "--log-out",
                    "-B",
                    "--log-io",
                    "-T",
                    "--log-timing",
                    "-m",
                    "--logging-format",
                ],
            )
            .into_iter()
            .take(1)
            .chain(option_values(
                args,
                &[
                    "-O",
                    "--log-out",
                    "-B",
                    "--log-io",
                    "-I",
                    "--log-in",
                    "-T",
                    "--log-timing",
                ],
            ))
            .collect(),
        ),
        "history"
            if args
                .iter()
                .any(|a| a.starts_with('-') && a.contains(['w', 'a'])) =>
        {
            each_write(operands(args, &[]))
        }
        "truncate" => each_write(operands(args, &["-s", "--size", "-r", "--reference"])),
        "touch" => each_write(operands(args, &["-d", "--date", "-t", "-r", "--reference"])),
        "mkdir" | "mkfifo" => each_write(operands(args, &["-m", "--mode", "-Z", "--context"])),
        "mknod" if args.iter().any(|a| matches!(a.as_str(), "b" | "c" | "u")) => Err((
            "device node creation",
            "`mknod` makes a block or character device node, through which a disk or the \
             kernel's memory can be written"
                .into(),
        )),
        "mknod" => each_write(
            operands(args, &["-m", "--mode", "-Z", "--context"])
                .into_iter()
                .take(1)
                .collect(),
        ),
        "sed" | "gsed" => sed(c, args),
        "sort" => {
            // `-uo FILE`, `--outp=FILE` (GNU takes any unambiguous prefix), and the temporary
            // files `-T DIR` leaves in a directory.
            let mut targets = short_values(args, 'o');
            targets.extend(long_values(args, "--output", 3));
            for dir in short_values(args, 'T').into_iter().chain(long_values(
                args,
                "--temporary-directory",
                3,
            )) {
                targets.push(format!("{}/sort-tmp", dir.trim_end_matches('/')));
            }
            each_write(targets)
        }
        "less" | "more" => {
            let mut targets = short_values(args, 'o');
            targets.extend(short_values(args, 'O'));
            targets.extend(long_values(args, "--log-file", 6));
            targets.extend(long_values(args, "--LOG-FILE", 6));
            each_write(targets)
        }
        "tree" => each_write(short_values(args, 'o')),
        "uniq" => each_write(
            operands(
                args,
                &[
                    "-f",
                    "-s",
                    "-w",
                    "--skip-fields",
                    "--skip-chars",
                    "--check-chars",
                ],
            )
            .into_iter()
            .skip(1)
            .collect(),
        ),
        "xxd" => each_write(
            operands(
                args,
                &[
                    "-c", "-g", "-l", "-s", "-o", "-n", "-C", "-R", "-cols", "-len", "-seek",
                ],
            )
            .into_iter()
            .skip(1)
            .collect(),
        ),
        "patch" => {
            let mut targets = option_values(args, &["-o", "--output"]);
            targets.extend(
                operands(
                    args,
                    &[
                        "-i",
                        "--input",
                        "-p",
                        "-d",
                        "--directory",
                        "-B",
                        "-D",
                        "-F",
                        "-r",
                        "-V",
                        "-z",
                        "-Y",
                        "-o",
                        "--output",
                    ],
                )
                .into_iter()
                .take(1),
            );
            each_write(targets)
        }
        "ed" | "red" => each_write(operands(args, &["-p", "--prompt"])),
        "git" => git(c, args),
        // `cargo clean --target-dir DIR` deletes DIR.
        "cargo" if args.first().is_some_and(|a| a == "clean") => {
            for dir in option_values(args, &["--target-dir"]) {
                c.delete(&dir, true)?;
            }
            Ok(())
        }
        "ps" if args.iter().any(|a| {
            !a.starts_with('-') && a.chars().all(|ch| ch.is_ascii_alphabetic()) && a.contains('e')
        }) =>
        {
            c.ask("`ps` with `e` shows other processes' environment, which can hold keys".into());
            Ok(())
        }
        "date"
            if !short_values(args, 's').is_empty() || !long_values(args, "--set", 2).is_empty() =>
        {
            Err((
                "system clock change",
                "`date -s` sets the system clock, which breaks certificates, builds and logs"
                    .into(),
            ))
        }
        "hostname"
            if args.iter().any(|a| {
                !a.starts_with('-')
                    || a.starts_with("--file")
                    || a.starts_with("--boot")
                    || (!a.starts_with("--") && a.contains(['F', 'b']))
            }) =>
        {
            Err((
                "host name change",
                "`hostname` with a name or a file renames the machine".into(),
            ))
        }
        "curl" => each_write(option_values(args, CURL_OUTPUTS)),
        "wget" => each_write(option_values(args, WGET_OUTPUTS)),
        "tar" | "bsdtar" | "gtar" => tar(c, args),
        "unzip" => {
            let dirs = option_values(args, &["-d"]);
            dirs.iter().for_each(|d| into_protected_tree(c, d));
            each_write(dirs)
        }
        "chmod" | "chown" | "chgrp" | "chattr" | "chflags" | "setfacl" | "chcon" | "setfattr"
        | "restorecon" | "icacls" | "takeown" | "cacls" => permissions(c, &name, args),
        "crontab" => crontab(args),
        _ => Ok(()),
    }
}

const COPY_VALUES: &[&str] = &["-t", "--target-directory", "-S", "--suffix"];
const INSTALL_VALUES: &[&str] = &[
    "-t",
    "--target-directory",
    "-m",
    "--mode",
    "-o",
    "--owner",
    "-g",
    "--group",
    "-S",
    "--suffix",
];
const RSYNC_VALUES: &[&str] = &[
    "-e",
    "--rsh",
    "--exclude",
    "--include",
    "--filter",
    "-f",
    "--files-from",
    "--rsync-path",
    "-T",
    "--temp-dir",
    "--log-file",
    "--password-file",
    "--chmod",
    "--chown",
];
const SCP_VALUES: &[&str] = &["-i", "-P", "-o", "-F", "-c", "-l", "-J", "-S"];
const CURL_OUTPUTS: &[&str] = &[
    "-o",
    "--output",
    "-D",
    "--dump-header",
    "-c",
    "--cookie-jar",
    "--output-dir",
    "--trace",
    "--trace-ascii",
    "--stderr",
];
const WGET_OUTPUTS: &[&str] = &[
    "-O",
    "--output-document",
    "-P",
    "--directory-prefix",
    "-o",
    "--output-file",
    "-a",
    "--append-output",
];

fn escalation(name: &str, args: &[String]) -> Result<(), Blocked> {
    let why = |detail: String| Err(("privilege escalation", detail));
    if ESCALATORS.contains(&name) {
        return why(format!(
            "`{name}` runs commands with another user's (usually root's) rights"
        ));
    }
    match name {
        "systemd-run" if !args.iter().any(|a| a == "--user") => {
            why("`systemd-run` without `--user` starts a system service as root".into())
        }
        "machinectl" if args.iter().any(|a| a == "shell" || a == "login") => {
            why("`machinectl shell` opens a shell as another user".into())
        }
        "osascript"
            if args
                .iter()
                .any(|a| a.to_ascii_lowercase().contains("administrator privileges")) =>
        {
            why("AppleScript `with administrator privileges` runs as root".into())
        }
        _ => Ok(()),
    }
}

fn disks(name: &str, args: &[String]) -> Result<(), Blocked> {
    let first = args
        .iter()
        .find(|a| !a.starts_with('-'))
        .map(String::as_str);
    let any = |words: &[&str]| {
        args.iter()
            .any(|a| words.contains(&a.to_ascii_lowercase().as_str()))
    };
    let blocked = match name {
        n if n.starts_with("mkfs") || n.starts_with("newfs") || n.starts_with("mke2fs") => true,
        n if n.starts_with("fsck") || n.starts_with("e2fsck") => true,
        "tune2fs" | "resize2fs" | "e2label" | "xfs_repair" | "xfs_admin" | "xfs_growfs"
        | "btrfstune" | "partx" | "fstrim" | "addpart" | "delpart" | "resizepart" | "partprobe"
        | "kpartx" | "zerofree" => true,
        "debugfs" => any(&["-w"]),
        "dmsetup" => matches!(
            first,
            Some(
                "remove"
                    | "remove_all"
                    | "wipe_table"
                    | "clear"
                    | "create"
                    | "load"
                    | "reload"
                    | "suspend"
                    | "rename"
                    | "message"
            )
        ),
        "mkswap" | "wipefs" | "fdisk" | "sfdisk" | "cfdisk" | "gdisk" | "sgdisk" | "cgdisk"
        | "parted" | "blkdiscard" | "mkntfs" | "mkdosfs" | "mkexfatfs" | "mformat" | "diskpart"
        | "format" | "pvcreate" | "pvremove" | "vgremove" | "lvremove" | "vgreduce"
        | "lvreduce" | "bcdedit" | "sg_format" | "fdformat" | "mkudffs" | "mkhfs" | "pdisk" => true,
        "cryptsetup" => any(&["luksformat", "erase", "lukserase", "reencrypt", "format"]),
        "diskutil" => any(&[
            "erasedisk",
            "erasevolume",
            "partitiondisk",
            "zerodisk",
            "randomdisk",
            "secureerase",
            "reformat",
            "deletecontainer",
            "deletevolume",
            "splitpartition",
            "mergepartitions",
            "resizevolume",
        ]),
        "zpool" => matches!(
            first,
            Some("destroy" | "create" | "labelclear" | "add" | "attach" | "replace" | "split")
        ),
        "zfs" => matches!(first, Some("destroy" | "rollback")),
        "mdadm" => any(&["--create", "-c", "--zero-superblock", "--build"]),
        "badblocks" => any(&["-w"]),
        "hdparm" => args.iter().any(|a| {
            a.starts_with("--security-erase")
                || a.starts_with("--trim-sector")
                || a == "--write-sector"
                || a == "--make-bad-sector"
        }),
        "nvme" => matches!(first, Some("format" | "sanitize" | "delete-ns")),
        "flashrom" => any(&["-w", "--write", "-e", "--erase"]),
        "gpart" => matches!(first, Some("destroy" | "create" | "delete")),
        "vssadmin" | "wbadmin" => any(&["delete"]),
        _ => false,
    };
    if blocked {
        return Err((
            "disk formatting or partitioning",
            format!("`{name}` erases, formats or repartitions disks"),
        ));
    }
    Ok(())
}

fn power(name: &str, args: &[String]) -> Result<(), Blocked> {
    let first = args
        .iter()
        .find(|a| !a.starts_with('-'))
        .map(String::as_str);
    let blocked = match name {
        "shutdown" | "reboot" | "poweroff" | "halt" | "kexec" | "openrc-shutdown" => true,
        "init" | "telinit" => matches!(first, Some("0" | "6" | "1" | "s" | "S")),
        "systemctl" => {
            let units = args.iter().any(|a| {
                let unit = a.to_ascii_lowercase();
                [
                    "display-manager",
                    "gdm",
                    "sddm",
                    "lightdm",
                    "systemd-logind",
                    "dbus",
                ]
                .iter()
                .any(|u| unit.starts_with(u))
            });
            let stops = args
                .iter()
                .any(|a| matches!(a.as_str(), "stop" | "kill" | "mask" | "restart" | "disable"));
            matches!(
                first,
                Some(
                    "poweroff"
                        | "reboot"
                        | "halt"
                        | "kexec"
                        | "soft-reboot"
                        | "emergency"
                        | "rescue"
                        | "suspend"
                        | "hibernate"
                        | "hybrid-sleep"
                        | "suspend-then-hibernate"
                        | "sleep"
                        | "isolate"
                        | "default"
                        | "switch-root"
                        | "exit"
                )
            ) || (units && stops)
        }
        "gnome-session-quit"
        | "xfce4-session-logout"
        | "cinnamon-session-quit"
        | "mate-session-save"
        | "lxqt-leave"
        | "lxsession-logout"
        | "pm-suspend"
        | "pm-hibernate"
        | "zzz"
        | "ZZZ" => true,
        "dbus-send" | "busctl" | "gdbus" | "qdbus" | "qdbus6" => {
            let text = args.join(" ").to_ascii_lowercase();
            let manager = text.contains("login1")
                || text.contains("systemd1")
                || text.contains("ksmserver")
                || text.contains("sessionmanager");
            manager
                && [
                    "poweroff",
                    "reboot",
                    "halt",
                    "kexec",
                    "suspend",
                    "hibernate",
                    "hybridsleep",
                    "terminatesession",
                    "terminateuser",
                    "killsession",
                    "killuser",
                    "logout",
                    "shutdown",
                    "isolate",
                ]
                .iter()
                .any(|m| text.contains(m))
        }
        "loginctl" => matches!(
            first,
            Some(
                "poweroff"
                    | "reboot"
                    | "halt"
                    | "terminate-user"
                    | "kill-user"
                    | "terminate-session"
                    | "kill-session"
            )
        ),
        _ => false,
    };
    if blocked {
        return Err((
            "shutdown or reboot",
            format!("`{name}` stops the machine or the person's session"),
        ));
    }
    Ok(())
}

fn kill_all(c: &Check<'_>, name: &str, args: &[String]) -> Result<(), Blocked> {
    let every = |p: &str| {
        let p = p.trim_start_matches('+');
        p.parse::<i64>().is_ok_and(|n| n == -1 || n == 1)
    };
    let match_all = |pattern: &str| {
        let core = pattern.trim_start_matches('^').trim_end_matches('$');
        matches!(core, "" | "." | ".*" | ".+" | "..*" | "[^]" | "\\w*" | ".?")
    };
    let blocked = match name {
        "pkill" | "killall" | "slay" => {
            let short = |letter: char| {
                args.iter()
                    .any(|a| a.starts_with('-') && !a.starts_with("--") && a[1..].contains(letter))
            };
            let regex = name == "pkill"
                || short('r')
                || args.iter().any(|a| a == "--regexp" || a == "--regex");
            let patterns = operands(
                args,
                &[
                    "-u",
                    "-U",
                    "-g",
                    "-G",
                    "-P",
                    "-s",
                    "-t",
                    "-n",
                    "--signal",
                    "--ns",
                    "--nslist",
                    "-F",
                    "--pidfile",
                    "-o",
                    "--older-than",
                    "-y",
                    "--younger-than",
                    "-c",
                    "--cgroup",
                ],
            );
            // A user filter with no name to match signals every process of that user.
            let by_user = short('u')
                || (name == "pkill" && short('U'))
                || args.iter().any(|a| {
                    a.starts_with("--user") || a.starts_with("--euid") || a.starts_with("--uid")
                });
            (name == "pkill" && (short('v') || args.iter().any(|a| a == "--inverse")))
                || (by_user && patterns.is_empty())
                || (regex && patterns.iter().any(|p| match_all(p)))
        }
        "killall5" => true,
        "kill" => {
            let mut operands: Vec<&str> = Vec::new();
            let mut i = 0;
            let mut signal_seen = false;
            let mut options = true;
            while i < args.len() {
                let a = args[i].as_str();
                if options && a == "--" {
                    options = false;
                } else if options && matches!(a, "-s" | "-n" | "--signal") {
                    signal_seen = true;
                    i += 1;
                } else if options && !signal_seen && a.starts_with('-') && a.len() > 1 {
                    // The first dash word is the signal (`-9`, `-KILL`, `-1`)...
                    signal_seen = true;
                    if args.len() == 1 && a == "-1" {
                        // ...but `kill -1` on its own reads as "every process".
                        operands.push(a);
                    }
                } else {
                    operands.push(a);
                }
                i += 1;
            }
            if operands.iter().any(|p| p.contains(['$', '`'])) {
                c.ask("`kill` signals processes only known when the command runs".into());
            }
            operands.iter().any(|p| every(p))
        }
        _ => false,
    };
    if blocked {
        return Err((
            "killing every process",
            format!("`{name}` here signals every process (or init), ending the session"),
        ));
    }
    Ok(())
}

fn windows(c: &Check<'_>, name: &str, args: &[String]) -> Result<(), Blocked> {
    match name {
        "reg" => {
            let op = args.first().map(|a| a.to_ascii_lowercase());
            match op.as_deref() {
                Some("import" | "restore" | "load" | "unload") => Err((
                    "Windows system change",
                    "`reg` loading or restoring hives changes system configuration".into(),
                )),
                Some("add" | "delete" | "copy") => match args.get(1) {
                    Some(key) => {
                        // Unquoted in bash the backslashes are gone (`HKLMSoftware...`), so
                        // judge the hive by its prefix as well as through the path table.
                        let upper = key.to_ascii_uppercase();
                        let system_hive = [
                            "HKLM",
                            "HKEY_LOCAL_MACHINE",
                            "HKCR",
                            "HKEY_CLASSES_ROOT",
                            "HKU",
                            "HKEY_USERS",
                        ]
                        .iter()
                        .any(|h| upper.starts_with(h));
                        let autostart = upper.contains("CURRENTVERSION") && upper.contains("RUN");
                        if system_hive || autostart {
                            return Err((
                                "Windows system change",
                                format!(
                                    "`reg {}` changes system-wide or autostart registry keys ({key})",
                                    args[0]
                                ),
                            ));
                        }
                        c.paths()
                            .check_write(Path::new(key))
                            .map(|_| ())
                            .map_err(|r| ("Windows system change", r.message))
                    }
                    None => Ok(()),
                },
                _ => Ok(()),
            }
        }
        "regedit" if !args.is_empty() => Err((
            "Windows system change",
            "`regedit` with arguments imports registry files".into(),
        )),
        _ => Ok(()),
    }
}

/// `rm`, `rmdir`, `unlink`.
fn remove(c: &Check<'_>, name: &str, args: &[String]) -> Result<(), Blocked> {
    let mut recursive = false;
    let mut targets: Vec<&str> = Vec::new();
    let mut options = true;
    for a in args {
        if options && a == "--" {
            options = false;
        } else if options && a == "--no-preserve-root" {
            return Err((
                "recursive delete of a protected path",
                "`--no-preserve-root` exists only to delete the filesystem root".into(),
            ));
        } else if options && a.starts_with("--") {
            recursive |= a == "--recursive";
        } else if options && a.starts_with('-') && a.len() > 1 {
            recursive |= name == "rm" && a.contains(['r', 'R']);
        } else {
            targets.push(a);
        }
    }
    let rule = if recursive {
        "recursive delete of a protected path"
    } else {
        "delete of a protected path"
    };
    for target in targets {
        c.delete(target, recursive)
            .map_err(|(_, why)| (rule, why))?;
    }
    Ok(())
}

/// `find / -delete`, `find ~ -exec rm -rf {} +`.
fn find(c: &Check<'_>, args: &[String]) -> Result<(), Blocked> {
    for (i, a) in args.iter().enumerate() {
        if matches!(a.as_str(), "-fprint" | "-fprint0" | "-fprintf" | "-fls")
            && let Some(target) = args.get(i + 1)
        {
            c.write(target)?;
        }
    }
    const DESTRUCTIVE: &[&str] = &[
        "rm", "rmdir", "shred", "unlink", "chmod", "chown", "chgrp", "mv", "truncate", "dd",
        "chattr", "wipe", "srm",
    ];
    let deletes = args.iter().enumerate().any(|(i, a)| {
        a == "-delete"
            || (matches!(a.as_str(), "-exec" | "-execdir" | "-ok" | "-okdir")
                && args
                    .get(i + 1)
                    .is_some_and(|p| DESTRUCTIVE.contains(&program_name(p))))
    });
    if !deletes {
        return Ok(());
    }
    let is_expression = |a: &&String| a.starts_with('-') || a.as_str() == "(" || a.as_str() == "!";
    // `find -L /`: symlink options come before the paths.
    let mut starts: Vec<&str> = args
        .iter()
        .skip_while(|a| {
            matches!(
                a.as_str(),
                "-L" | "-H" | "-P" | "-O0" | "-O1" | "-O2" | "-O3"
            )
        })
        .take_while(|a| !is_expression(a))
        .map(String::as_str)
        .collect();
    if starts.is_empty() {
        starts.push(".");
    }
    for start in starts {
        c.delete(start, true)
            .map_err(|(_, why)| ("recursive delete of a protected path", why))?;
    }
    Ok(())
}

/// Sources and destination of `cp`/`mv`/`ln`-style commands.
fn copy_targets(args: &[String], values: &[&str]) -> (Vec<String>, Option<String>) {
    let mut target_dir = None;
    for (i, a) in args.iter().enumerate() {
        if a == "-t" || a == "--target-directory" {
            target_dir = args.get(i + 1).cloned();
        } else if let Some(dir) = a.strip_prefix("--target-directory=") {
            target_dir = Some(dir.to_string());
        } else if a.starts_with('-') && !a.starts_with("--") && a.len() > 2 && a.contains('t') {
            // A cluster: `-vt DIR`, `-Dt DIR`, `-tDIR`.
            let at = a.find('t').unwrap_or(0);
            let rest = &a[at + 1..];
            target_dir = if rest.is_empty() {
                args.get(i + 1).cloned()
            } else {
                Some(rest.to_string())
            };
        }
    }
    let mut ops = operands(args, values);
    if let Some(dir) = &target_dir {
        // The clustered form's directory is not an operand.
        if let Some(at) = ops.iter().position(|o| o == dir) {
            ops.remove(at);
        }
    }
    match target_dir {
        Some(dir) => (ops, Some(dir)),
        None if ops.len() >= 2 => {
            let dest = ops.pop();
            (ops, dest)
        }
        None => (ops, None),
    }
}

/// Refuses writing `sources` into `dest` (a directory or a file name).
fn write_into(c: &Check<'_>, sources: &[String], dest: Option<&str>) -> Result<(), Blocked> {
    let Some(dest) = dest else {
        return Ok(());
    };
    let Some(dest_path) = c.path(dest) else {
        return Ok(());
    };
    let resolved = c.paths().resolve(&dest_path);
    let home = c.paths().home().map(|h| c.paths().resolve(h));
    let is_home = home.as_deref() == Some(resolved.as_path());
    let is_dir = dest.ends_with('/') || is_home || resolved.is_dir();
    if !is_dir {
        return c.write(dest);
    }
    // Into a directory: the files land inside it. A protected directory is refused even so.
    if let Err(blocked) = c.write(dest) {
        // Copying into the home directory itself (`cp x ~`) writes `~/x`, which is fine.
        if !is_home {
            return Err(blocked);
        }
    }
    for source in sources {
        let base = source
            .trim_end_matches('/')
            .rsplit('/')
            .next()
            .unwrap_or(source);
        if !base.is_empty() && base != "." && base != ".." {
            c.write(&format!("{}/{base}", dest.trim_end_matches('/')))?;
        }
    }
    Ok(())
}

fn is_remote(arg: &str) -> bool {
    match arg.split_once(':') {
        Some((host, _)) => host.len() > 1 && !host.contains('/'),
        None => false,
    }
}

/// The non-option words; `values` are options whose value is the next word.
fn operands(args: &[String], values: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    let mut i = 0;
    let mut options = true;
    while i < args.len() {
        let a = &args[i];
        if options && a == "--" {
            options = false;
        } else if options && a.starts_with('-') && a.len() > 1 {
            if values.contains(&a.as_str()) {
                i += 1;
            }
        } else {
            out.push(a.clone());
        }
        i += 1;
    }
    out
}

/// The values of the given options, in `-o X`, `--output X`, `--output=X` and `-oX` forms.
fn option_values(args: &[String], names: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    for (i, a) in args.iter().enumerate() {
        for name in names {
            if a == name {
                out.extend(args.get(i + 1).cloned());
            } else if let Some(v) = a.strip_prefix(&format!("{name}=")) {
                out.push(v.to_string());
            } else if name.len() == 2 && a.len() > 2 && a.starts_with(name) && !a.starts_with("--")
            {
                out.push(a[2..].to_string());
            }
        }
    }
    out
}

fn sed(c: &Check<'_>, args: &[String]) -> Result<(), Blocked> {
    // `-i`, `-i.bak`, `-Ei`, `--in-place[=SUFFIX]`; `-e`/`-f` clusters take a value instead.
    let in_place = args.iter().any(|a| {
        a.starts_with("--in-place")
            || (a.starts_with('-')
                && !a.starts_with("--")
                && a[1..]
                    .chars()
                    .take_while(|ch| !matches!(ch, 'e' | 'f' | 'l'))
                    .any(|ch| ch == 'i'))
    });
    if !in_place {
        return Ok(());
    }
    let scripted = args.iter().any(|a| {
        a == "-e" || a == "-f" || a.starts_with("--expression") || a.starts_with("--file")
    });
    let mut files = operands(
        args,
        &["-e", "--expression", "-f", "--file", "-l", "--line-length"],
    );
    if !scripted && !files.is_empty() {
        files.remove(0);
    }
    files.iter().try_for_each(|f| c.write(f))
}

fn tar(c: &Check<'_>, args: &[String]) -> Result<(), Blocked> {
    let first = args.first().map(String::as_str).unwrap_or("");
    let cluster = first.trim_start_matches('-');
    let short_mode = !first.starts_with("--") && !cluster.is_empty() && !cluster.contains('/');
    // The mode may come in any short cluster (`tar -C ~ -czf x .ssh`).
    let cluster_has = |letters: &[char]| {
        args.iter().any(|a| {
            a.starts_with('-')
                && !a.starts_with("--")
                && a[1..].chars().all(|ch| ch.is_ascii_alphabetic())
                && a[1..].contains(letters)
        })
    };
    let extracting = (short_mode && cluster.contains('x'))
        || cluster_has(&['x'])
        || args.iter().any(|a| a == "--extract" || a == "--get");
    let creating = (short_mode && cluster.contains(['c', 'r', 'u']))
        || cluster_has(&['c', 'r', 'u'])
        || args
            .iter()
            .any(|a| a == "--create" || a == "--append" || a == "--update");
    if extracting {
        for dir in option_values(args, &["-C", "--directory"]) {
            c.write(&dir)?;
            into_protected_tree(c, &dir);
        }
    }
    if creating {
        for file in option_values(args, &["-f", "--file"]) {
            c.write(&file)?;
        }
        // `tar -C ~ -czf x.tgz .ssh`: the members are read from the directory `-C` names.
        if let Some(dir) = option_values(args, &["-C", "--directory"]).last() {
            let members = operands(
                &args[1..],
                &[
                    "-f",
                    "--file",
                    "-C",
                    "--directory",
                    "-T",
                    "--files-from",
                    "-X",
                    "--exclude-from",
                ],
            );
            for member in members {
                if let Some(why) = c.read(&format!("{}/{member}", dir.trim_end_matches('/'))) {
                    c.ask(why);
                }
            }
        }
    }
    Ok(())
}

/// `chmod`, `chown`, `chattr` and friends on protected paths.
fn permissions(c: &Check<'_>, name: &str, args: &[String]) -> Result<(), Blocked> {
    let recursive = args.iter().any(|a| {
        a == "--recursive"
            || a.eq_ignore_ascii_case("/t")
            || (a.starts_with('-') && !a.starts_with("--") && a.contains('R'))
    });
    let mode_like = |a: &str| {
        a.len() > 1
            && a[1..]
                .chars()
                .all(|ch| "rwxXstugoa=+-,01234567AacCdDeijPSTu".contains(ch))
    };
    let mut targets: Vec<&str> = Vec::new();
    // Which words are the mode/owner rather than files.
    let mut mode_seen = args.iter().any(|a| a.starts_with("--reference"))
        || matches!(
            name,
            "chattr" | "setfattr" | "restorecon" | "icacls" | "takeown" | "cacls" | "setfacl"
        );
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_str();
        let windows_switch = a.starts_with('/') && a.len() <= 3 && a.len() > 1;
        match name {
            "chattr" if a.starts_with(['+', '=']) || (a.starts_with('-') && mode_like(a)) => {}
            "setfacl"
                if matches!(
                    a,
                    "-m" | "-x" | "-M" | "-X" | "--modify" | "--remove" | "--set" | "--set-file"
                ) =>
            {
                i += 1
            }
            "setfattr" if matches!(a, "-n" | "-v" | "-x" | "--name" | "--value" | "--remove") => {
                i += 1
            }
            "icacls" | "cacls" | "takeown" if windows_switch || a.starts_with("/grant") => {
                if a.eq_ignore_ascii_case("/f") {
                    targets.extend(args.get(i + 1).map(String::as_str));
                    i += 1;
                } else if matches!(
                    a.to_ascii_lowercase().as_str(),
                    "/grant" | "/deny" | "/remove" | "/setowner" | "/grant:r"
                ) {
                    i += 1;
                }
            }
            _ if a.starts_with("--") => {}
            "chmod" if a.starts_with('-') && !mode_seen && mode_like(a) && a != "-R" => {
                mode_seen = true
            }
            _ if a.starts_with('-') && a.len() > 1 => {}
            _ if !mode_seen => mode_seen = true,
            _ => targets.push(a),
        }
        i += 1;
    }
    if matches!(name, "icacls" | "cacls") {
        targets.extend(args.first().map(String::as_str));
    }
    for target in targets {
        let result = if recursive {
            c.delete(target, true)
        } else {
            c.write(target)
        };
        result.map_err(|(_, why)| ("permission change on a protected path", why))?;
    }
    Ok(())
}

fn crontab(args: &[String]) -> Result<(), Blocked> {
    let lists = args.iter().any(|a| a == "-l");
    let changes = args.iter().any(|a| a != "-l" && !a.starts_with("-u"));
    if lists && !changes {
        return Ok(());
    }
    Err((
        "crontab change",
        "`crontab` other than `-l` replaces or removes the scheduled tasks".into(),
    ))
}

/// Kernel settings, swap, mounts and firewalls: changes to the running system that break it for
/// every program at once.
fn system_state(c: &Check<'_>, name: &str, args: &[String]) -> Result<(), Blocked> {
    let any = |words: &[&str]| args.iter().any(|a| words.contains(&a.as_str()));
    let why = |rule: &'static str, detail: String| Err((rule, detail));
    match name {
        "sysctl"
            if any(&["-w", "--write", "-p", "--load", "--system", "-a"]) && !any(&["-a"])
                || args.iter().any(|a| !a.starts_with('-') && a.contains('='))
                || args
                    .iter()
                    .any(|a| a.starts_with("--load=") || a.starts_with("-p")) =>
        {
            why(
                "kernel setting change",
                "`sysctl` changes kernel settings".into(),
            )
        }
        "swapoff" => why(
            "swap change",
            "`swapoff` takes memory away from the running system".into(),
        ),
        "umount" => {
            if any(&["-a", "--all", "-A", "--all-targets", "-R", "--recursive"]) {
                return why(
                    "unmounting system paths",
                    "`umount -a` unmounts every file system".into(),
                );
            }
            for target in operands(
                args,
                &["-t", "--types", "-O", "--test-opts", "-N", "--namespace"],
            ) {
                if let Some(path) = c.path(&target)
                    && c.paths().check_delete(&path).is_err()
                {
                    return why(
                        "unmounting system paths",
                        format!("`umount {target}` takes away a file system the machine needs"),
                    );
                }
            }
            Ok(())
        }
        "mount" => {
            let options = option_values(args, &["-o", "--options"]).join(",");
            if options.contains("remount") || any(&["--move", "-M"]) {
                return why(
                    "remounting system paths",
                    "`mount` here remounts or moves a mounted file system".into(),
                );
            }
            let targets = operands(
                args,
                &[
                    "-t",
                    "--types",
                    "-o",
                    "--options",
                    "-O",
                    "--test-opts",
                    "-L",
                    "--label",
                    "-U",
                    "--uuid",
                    "-T",
                    "--fstab",
                    "-N",
                    "--namespace",
                ],
            );
            if let Some(target) = targets.last()
                && targets.len() > 1
                && let Some(path) = c.path(target)
                && c.paths().check_write(&path).is_err()
            {
                return why(
                    "mounting over system paths",
                    format!("`mount` over {target} would hide or replace a protected path"),
                );
            }
            Ok(())
        }
        "iptables" | "ip6tables" | "iptables-legacy" | "iptables-nft" | "ip6tables-legacy"
        | "ip6tables-nft" | "ebtables" | "arptables"
            if args.iter().any(|a| {
                matches!(
                    a.as_str(),
                    "-F" | "--flush" | "-X" | "--delete-chain" | "-P" | "--policy"
                )
            }) =>
        {
            why(
                "firewall change",
                format!("`{name}` here flushes the firewall or changes its default policy"),
            )
        }
        "iptables-restore" | "ip6tables-restore" | "nft"
            if name != "nft" || any(&["flush", "delete", "-f", "--file"]) =>
        {
            why(
                "firewall change",
                format!("`{name}` here replaces or removes firewall rules"),
            )
        }
        "ufw" if any(&["disable", "reset"]) => why(
            "firewall change",
            "`ufw` here switches the firewall off".into(),
        ),
        "firewall-cmd"
            if args
                .iter()
                .any(|a| a == "--panic-on" || a.starts_with("--set-default-zone")) =>
        {
            why(
                "firewall change",
                "`firewall-cmd` here drops all traffic or opens every port".into(),
            )
        }
        _ => Ok(()),
    }
}

/// Taking the network down: interfaces, addresses, routes, radios, the connection manager.
fn network(name: &str, args: &[String]) -> Result<(), Blocked> {
    let lower: Vec<String> = args.iter().map(|a| a.to_ascii_lowercase()).collect();
    let words: Vec<&str> = lower
        .iter()
        .map(String::as_str)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let first = words.first().copied().unwrap_or("");
    let abbreviates = |word: &str, full: &str| !word.is_empty() && full.starts_with(word);
    let has = |w: &str| words.contains(&w);
    let blocked = match name {
        "ip" => {
            (abbreviates(first, "link")
                && (has("down")
                    || words
                        .iter()
                        .skip(1)
                        .take(1)
                        .any(|w| abbreviates(w, "delete"))))
                || ((abbreviates(first, "address")
                    || abbreviates(first, "route")
                    || abbreviates(first, "neighbour"))
                    && words.get(1).is_some_and(|w| abbreviates(w, "flush")))
        }
        "ifconfig" => has("down"),
        "ifdown" | "if-down" => true,
        "nmcli" => {
            let second = words.get(1).copied().unwrap_or("");
            (abbreviates(first, "networking") && abbreviates(second, "off"))
                || (abbreviates(first, "radio") && has("off"))
                || (abbreviates(first, "connection")
                    && (abbreviates(second, "down") || abbreviates(second, "delete")))
                || (abbreviates(first, "device")
                    && ["disconnect", "down", "delete"]
                        .iter()
                        .any(|w| abbreviates(second, w)))
        }
        "rfkill" => has("block"),
        "networkctl" => has("down"),
        "systemctl" => {
            let stops = has("stop") || has("kill") || has("mask") || has("disable");
            stops
                && words.iter().any(|w| {
                    [
                        "networkmanager",
                        "network",
                        "systemd-networkd",
                        "wpa_supplicant",
                        "iwd",
                        "firewalld",
                        "ufw",
                        "nftables",
                        "iptables",
                        "systemd-resolved",
                    ]
                    .iter()
                    .any(|u| w.trim_end_matches(".service") == *u)
                })
        }
        _ => false,
    };
    if blocked {
        return Err((
            "taking the network down",
            format!("`{name}` here cuts the machine's network or switches its firewall off"),
        ));
    }
    Ok(())
}

/// `git clone URL DIR` writes DIR; `git clean -f` deletes under its directory.
fn git(c: &Check<'_>, args: &[String]) -> Result<(), Blocked> {
    // The subcommand: the first word that is neither a global option nor its value.
    let mut at = 0;
    while at < args.len() && args[at].starts_with('-') {
        let valued = matches!(
            args[at].as_str(),
            "-C" | "-c" | "--git-dir" | "--work-tree" | "--namespace" | "--config-env"
        );
        at += if valued { 2 } else { 1 };
    }
    if at >= args.len() {
        return Ok(());
    }
    if args[at] == "clean" {
        // `git -C ~ clean -fdx` deletes every untracked file under the directory.
        let force = args[at + 1..].iter().any(|a| {
            a == "--force" || (a.starts_with('-') && !a.starts_with("--") && a.contains('f'))
        });
        let dir = option_values(&args[..at], &["-C"])
            .pop()
            .unwrap_or_else(|| ".".into());
        return if force { c.delete(&dir, true) } else { Ok(()) };
    }
    if args[at] != "clone" {
        return Ok(());
    }
    let targets = operands(
        &args[at + 1..],
        &[
            "-b",
            "--branch",
            "-o",
            "--origin",
            "--depth",
            "-c",
            "--config",
            "--reference",
            "--separate-git-dir",
            "-u",
            "--upload-pack",
            "--template",
            "-j",
            "--jobs",
            "--filter",
            "--shallow-since",
            "--shallow-exclude",
            "--reference-if-able",
        ],
    );
    match targets.get(1) {
        Some(dir) => {
            into_protected_tree(c, dir);
            c.write(dir)
        }
        None => Ok(()),
    }
}

/// A link the command makes to a protected path (`ln -s ~/.ssh k`): whatever is later read or
/// written through it reaches the protected path under another name. Asked.
fn links_to(c: &Check<'_>, sources: &[String]) {
    for source in sources {
        match c.path(source) {
            Some(path) => {
                if let Err(refusal) = c.paths().check_delete(&path) {
                    c.ask(format!(
                        "it makes a link to {}, so later reads and writes through the link \
                         reach it: {}",
                        path.display(),
                        refusal.message
                    ));
                }
            }
            None => c.ask(format!(
                "it makes a link to `{source}`, which is only known when the command runs"
            )),
        }
    }
}

/// Copying a tree or unpacking an archive into a directory that holds protected paths
/// (`cp -r dots/. ~`, `rsync -a x/ ~/.config`): what lands there is only known when it runs.
/// Asked.
fn into_protected_tree(c: &Check<'_>, dest: &str) {
    let Some(path) = c.path(dest) else {
        return;
    };
    if let Err(refusal) = c.paths().check_delete(&path) {
        c.ask(format!(
            "it copies or unpacks files into {}, which holds protected paths: {}",
            path.display(),
            refusal.message
        ));
    }
}

/// The values of a short option, also inside a cluster (`-uo FILE`, `-uoFILE`, `-o FILE`).
fn short_values(args: &[String], letter: char) -> Vec<String> {
    let mut out = Vec::new();
    for (i, a) in args.iter().enumerate() {
        if a == "--" {
            break;
        }
        if !a.starts_with('-') || a.starts_with("--") || a.len() < 2 {
            continue;
        }
        if let Some(at) = a[1..].find(letter) {
            let rest = &a[1 + at + 1..];
            if rest.is_empty() {
                out.extend(args.get(i + 1).cloned());
            } else {
                out.push(rest.to_string());
            }
        }
    }
    out
}

/// The values of a long option given as any prefix of at least `min` characters after the
/// dashes, as GNU's option parser accepts (`--outp=FILE`, `--output FILE`).
fn long_values(args: &[String], option: &str, min: usize) -> Vec<String> {
    let full = option.trim_start_matches('-');
    let mut out = Vec::new();
    for (i, a) in args.iter().enumerate() {
        let Some(body) = a.strip_prefix("--") else {
            continue;
        };
        let (key, value) = match body.split_once('=') {
            Some((k, v)) => (k, Some(v)),
            None => (body, None),
        };
        if key.len() >= min.min(full.len()) && full.starts_with(key) {
            match value {
                Some(v) => out.push(v.to_string()),
                None => out.extend(args.get(i + 1).cloned()),
            }
        }
    }
    out
}

/// `-o FILE`, `--output FILE`, `-out FILE` and their `=` forms name an output file for most
/// programs (`gcc`, `go build`, `openssl`, `pandoc`, `wget -o`, ...): judged as a write. The
/// programs where `-o` means something else (an option string, a flag) are left out, and so are
/// those judged by their own rule above.
fn output_options(c: &Check<'_>, name: &str, args: &[String]) -> Result<(), Blocked> {
    const OTHER_MEANING: &[&str] = &[
        "ssh",
        "scp",
        "sftp",
        "mount",
        "umount",
        "ps",
        "grep",
        "egrep",
        "fgrep",
        "rg",
        "ag",
        "set",
        "rsync",
        "cp",
        "mv",
        "ls",
        "ln",
        "install",
        "tar",
        "bsdtar",
        "unzip",
        "chmod",
        "chown",
        "find",
        "xargs",
        "lsof",
        "fuser",
        "ip",
        "column",
        "join",
        "paste",
        "df",
        "du",
        "od",
        "nl",
        "cut",
        "uniq",
        "stat",
        "date",
        "less",
        "more",
        "sort",
        "tree",
        "pkill",
        "pgrep",
        "killall",
        "curl",
        "wget",
        "patch",
        "sed",
        "awk",
        "gawk",
        "bash",
        "sh",
        "zsh",
        "shopt",
        "nmcli",
        "zip",
        "7z",
        "jq",
        "readlink",
        "realpath",
        "file",
        "top",
        "htop",
        "free",
        "getopt",
        "ssh-keygen",
        "sshfs",
        "fusermount",
        "ionice",
        "time",
        "diff",
        "git",
        "hg",
        "tmux",
        "screen",
        "gpg",
        "docker",
        "podman",
        "kubectl",
        "helm",
    ];
    if OTHER_MEANING.contains(&name) {
        return Ok(());
    }
    let mut targets = Vec::new();
    for (i, a) in args.iter().enumerate() {
        match a.as_str() {
            "-o" | "--output" | "-out" | "--out" | "--outfile" | "--output-file" => {
                targets.extend(args.get(i + 1).cloned())
            }
            _ => {
                for prefix in [
                    "--output=",
                    "-out=",
                    "--out=",
                    "--outfile=",
                    "--output-file=",
                ] {
                    if let Some(value) = a.strip_prefix(prefix) {
                        targets.push(value.to_string());
                    }
                }
            }
        }
    }
    targets.iter().try_for_each(|t| c.write(t))
}

//! The rules, one function per class of harm. Each judges one simple command.

use std::path::Path;

use super::{Blocked, Check};
use crate::security::shell_syntax::{ESCALATORS, program_name};

pub(super) fn check(c: &Check<'_>) -> Result<(), Blocked> {
    let name = c.name();
    let args = c.args();
    escalation(&name, args)?;
    disks(&name, args)?;
    power(&name, args)?;
    kill_all(&name, args)?;
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
            match dest {
                // `host:path` is another machine's path.
                Some(d) if is_remote(&d) => Ok(()),
                dest => write_into(c, &sources, dest.as_deref()),
            }
        }
        "ln" | "link" => {
            let (sources, dest) = copy_targets(args, COPY_VALUES);
            write_into(c, &sources, dest.as_deref())
        }
        "tee" => each_write(operands(args, &[])),
        "truncate" => each_write(operands(args, &["-s", "--size", "-r", "--reference"])),
        "touch" => each_write(operands(args, &["-d", "--date", "-t", "-r", "--reference"])),
        "mkdir" | "mkfifo" => each_write(operands(args, &["-m", "--mode", "-Z", "--context"])),
        "mknod" => each_write(
            operands(args, &["-m", "--mode", "-Z", "--context"])
                .into_iter()
                .take(1)
                .collect(),
        ),
        "sed" | "gsed" => sed(c, args),
        "sort" => each_write(option_values(args, &["-o", "--output"])),
        "curl" => each_write(option_values(args, CURL_OUTPUTS)),
        "wget" => each_write(option_values(args, WGET_OUTPUTS)),
        "tar" | "bsdtar" | "gtar" => tar(c, args),
        "unzip" => each_write(option_values(args, &["-d"])),
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
        "systemctl" => matches!(
            first,
            Some("poweroff" | "reboot" | "halt" | "kexec" | "soft-reboot" | "emergency" | "rescue")
        ),
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

fn kill_all(name: &str, args: &[String]) -> Result<(), Blocked> {
    let blocked = match name {
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
            operands.iter().any(|p| *p == "-1" || *p == "1")
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
        }
    }
    let mut ops = operands(args, values);
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
    let extracting = (short_mode && cluster.contains('x'))
        || args
            .iter()
            .any(|a| a == "--extract" || a == "--get" || a == "-x");
    let creating = (short_mode && cluster.contains(['c', 'r', 'u']))
        || args.iter().any(|a| a == "--create" || a == "-c");
    if extracting {
        for dir in option_values(args, &["-C", "--directory"]) {
            c.write(&dir)?;
        }
    }
    if creating {
        for file in option_values(args, &["-f", "--file"]) {
            c.write(&file)?;
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

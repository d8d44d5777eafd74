//! The launcher's half on Linux: resource limits, landlock, `no_new_privs` and seccomp applied to
//! this (single-threaded) process, the report written, then `exec` into the program. Everything here
//! goes through safe APIs (`landlock`, `seccompiler`, `nix`, std's `CommandExt::exec`).

use std::collections::BTreeMap;
use std::io::Write;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};

use landlock::{
    ABI, Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, LandlockStatus,
    PathBeneath, PathFd, Ruleset, RulesetAttr, RulesetCreatedAttr, RulesetStatus, Scope,
};
use nix::libc;
use nix::sys::resource::{Resource, getrlimit, setrlimit};
use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, sock_filter,
};

use super::{Policy, SandboxLevel, SandboxReport};

/// The newest landlock ABI this code asks for; older kernels enforce what they know (best effort)
/// and the report names the ABI they have.
const LANDLOCK_ABI: ABI = ABI::V9;

/// Applies `policy` and execs the program. Returns only on failure, with what went wrong.
pub(super) fn confine_and_exec(policy: &Policy) -> String {
    // Opened before landlock: the app's directory is read-only from then on.
    let mut status_file = match policy.status_file.as_deref().map(std::fs::File::create) {
        None => None,
        Some(Ok(file)) => Some(file),
        Some(Err(e)) => return format!("cannot write the sandbox report: {e}"),
    };
    let report = confine(policy);

    if let Some(mut file) = status_file.take() {
        let json = serde_json::to_string(&report).unwrap_or_default();
        if let Err(e) = file.write_all(json.as_bytes()) {
            return format!("cannot write the sandbox report: {e}");
        }
    }
    if policy.require_enforced && report.level != SandboxLevel::Enforced {
        return format!(
            "refused: this kernel cannot sandbox it ({}); it is not run without the sandbox \
             (a kernel with landlock, Linux 5.13 or later with landlock enabled in the `lsm=` \
             list, is needed)",
            report.notes.join("; ")
        );
    }
    // ETXTBSY: a binary just written can still be open for writing in a process Osprey forked
    // meanwhile, until that process execs; it passes within moments.
    let mut attempts = 0;
    loop {
        let error = std::process::Command::new(&policy.program)
            .args(&policy.args)
            .exec();
        if error.kind() == std::io::ErrorKind::ExecutableFileBusy && attempts < 50 {
            attempts += 1;
            std::thread::sleep(std::time::Duration::from_millis(20));
            continue;
        }
        return format!("cannot start {}: {error}", policy.program.display());
    }
}

/// Applies `policy` to this process (limits, landlock, `no_new_privs`, seccomp) and says what the
/// kernel enforced.
pub(super) fn confine(policy: &Policy) -> SandboxReport {
    // Nothing confirmed yet; each part below says what it got.
    let mut report = SandboxReport {
        level: SandboxLevel::Enforced,
        notes: Vec::new(),
        ..SandboxReport::off("")
    };

    match set_limits(policy) {
        Ok(()) => report.limits = true,
        Err(e) => report.notes.push(format!("resource limits not set: {e}")),
    }
    if let Err(e) = landlock(policy, &mut report) {
        report
            .notes
            .push(format!("landlock could not be applied: {e}"));
    }
    match seccomp(policy.network) {
        Ok(()) => {
            report.seccomp = true;
            // seccompiler sets no_new_privs before installing a filter.
            report.no_new_privs = true;
        }
        Err(e) => report
            .notes
            .push(format!("seccomp filter not installed: {e}")),
    }
    report.network_blocked = !policy.network && report.seccomp;
    if !(report.filesystem && report.seccomp && report.no_new_privs) {
        report.level = SandboxLevel::Degraded;
    }
    report
}

fn set_limits(policy: &Policy) -> Result<(), String> {
    let cap = |resource: Resource, wanted: u64| -> Result<(), String> {
        let (_, hard) = getrlimit(resource).map_err(|e| format!("{resource:?}: {e}"))?;
        let value = wanted.min(hard);
        setrlimit(resource, value, value).map_err(|e| format!("{resource:?}: {e}"))
    };
    cap(Resource::RLIMIT_CORE, 0)?;
    cap(Resource::RLIMIT_NOFILE, policy.limits.open_files)?;
    cap(Resource::RLIMIT_FSIZE, policy.limits.file_size_bytes)?;
    cap(
        Resource::RLIMIT_NPROC,
        system_tasks().saturating_add(policy.limits.extra_tasks),
    )?;
    Ok(())
}

/// Every task (process or thread) on the system now: the fourth field of /proc/loadavg,
/// "running/total". An upper bound of the user's own.
fn system_tasks() -> u64 {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|text| {
            let field = text.split_whitespace().nth(3)?;
            field.split_once('/')?.1.parse().ok()
        })
        .unwrap_or(32_768)
}

fn landlock(policy: &Policy, report: &mut SandboxReport) -> Result<(), String> {
    let read = AccessFs::from_read(LANDLOCK_ABI) & !AccessFs::Execute;
    let read_execute = AccessFs::from_read(LANDLOCK_ABI);
    let read_write = if policy.execute_writable {
        AccessFs::from_all(LANDLOCK_ABI)
    } else {
        AccessFs::from_all(LANDLOCK_ABI) & !AccessFs::Execute
    };
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(AccessFs::from_all(LANDLOCK_ABI))
        .map_err(|e| e.to_string())?
        .scope(Scope::from_all(LANDLOCK_ABI))
        .map_err(|e| e.to_string())?;
    if !policy.network {
        // Handled with no rule allowing a port: every TCP bind and connect is refused.
        ruleset = ruleset
            .handle_access(AccessNet::from_all(LANDLOCK_ABI))
            .map_err(|e| e.to_string())?;
    }
    let mut ruleset = ruleset.create().map_err(|e| e.to_string())?;

    let mut rules: Vec<(PathBuf, BitFlags<AccessFs>)> = Vec::new();
    rules.extend(policy.system.iter().map(|p| (p.clone(), read_execute)));
    rules.extend(policy.read_only.iter().map(|p| (p.clone(), read)));
    rules.extend(policy.read_write.iter().map(|p| (p.clone(), read_write)));
    rules.extend(
        policy
            .devices
            .iter()
            .map(|p| (p.clone(), AccessFs::ReadFile | AccessFs::WriteFile)),
    );
    if let Some(dir) = &policy.socket_dir {
        rules.push((dir.clone(), read_execute | AccessFs::MakeSock));
    }
    // Its own /proc entry (the pid survives the exec): /proc/self works, other processes' do not.
    if let Ok(own) = std::fs::read_link("/proc/self") {
        rules.push((Path::new("/proc").join(own), read));
    }
    for (path, access) in rules {
        let Ok(metadata) = std::fs::metadata(&path) else {
            continue; // not on this system (e.g. /lib32)
        };
        let access = if metadata.is_dir() {
            access
        } else {
            access & AccessFs::from_file(LANDLOCK_ABI)
        };
        let Ok(fd) = PathFd::new(&path) else {
            continue;
        };
        ruleset = ruleset
            .add_rule(PathBeneath::new(fd, access))
            .map_err(|e| format!("{}: {e}", path.display()))?;
    }
    let status = ruleset.restrict_self().map_err(|e| e.to_string())?;
    report.no_new_privs = status.no_new_privs;
    match status.landlock {
        LandlockStatus::Available { effective_abi, .. } => {
            let abi = effective_abi as u32;
            report.landlock_abi = Some(abi);
            if abi < 3 {
                report
                    .notes
                    .push("truncating files is not confined (landlock ABI < 3)".into());
            }
            if abi < 4 && !policy.network {
                report.notes.push(
                    "TCP is refused by the seccomp socket filter only (landlock ABI < 4)".into(),
                );
            }
            if abi < 9 && policy.network {
                report.notes.push(
                    "connecting to Unix sockets by path is not confined (landlock ABI < 9)".into(),
                );
            }
            if abi < 6 {
                report.notes.push(
                    "signals and abstract Unix sockets are not scoped (landlock ABI < 6)".into(),
                );
            }
        }
        LandlockStatus::NotEnabled => report
            .notes
            .push("landlock is built into this kernel but not enabled (add it to `lsm=`)".into()),
        LandlockStatus::NotImplemented => report
            .notes
            .push("this kernel has no landlock (Linux 5.13 or later is needed)".into()),
    }
    report.filesystem = status.ruleset != RulesetStatus::NotEnforced;
    Ok(())
}

/// System calls no app needs, refused with EPERM.
fn denied_system_calls() -> Vec<i64> {
    vec![
        libc::SYS_ptrace,
        libc::SYS_process_vm_readv,
        libc::SYS_process_vm_writev,
        libc::SYS_mount,
        libc::SYS_umount2,
        libc::SYS_pivot_root,
        libc::SYS_chroot,
        libc::SYS_open_tree,
        libc::SYS_move_mount,
        libc::SYS_fsopen,
        libc::SYS_fsconfig,
        libc::SYS_fsmount,
        libc::SYS_fspick,
        libc::SYS_mount_setattr,
        libc::SYS_kexec_load,
        libc::SYS_kexec_file_load,
        libc::SYS_init_module,
        libc::SYS_finit_module,
        libc::SYS_delete_module,
        libc::SYS_bpf,
        libc::SYS_perf_event_open,
        libc::SYS_keyctl,
        libc::SYS_add_key,
        libc::SYS_request_key,
        libc::SYS_unshare,
        libc::SYS_setns,
        libc::SYS_reboot,
        libc::SYS_swapon,
        libc::SYS_swapoff,
        libc::SYS_personality,
        libc::SYS_userfaultfd,
        // io_uring performs opens and socket calls the filter never sees.
        libc::SYS_io_uring_setup,
        libc::SYS_io_uring_enter,
        libc::SYS_io_uring_register,
        libc::SYS_open_by_handle_at,
        libc::SYS_name_to_handle_at,
        libc::SYS_acct,
        libc::SYS_quotactl,
        libc::SYS_syslog,
    ]
}

fn condition(index: u8, operation: SeccompCmpOp, value: u64) -> Result<SeccompCondition, String> {
    SeccompCondition::new(index, SeccompCmpArgLen::Qword, operation, value)
        .map_err(|e| e.to_string())
}

fn seccomp(network: bool) -> Result<(), String> {
    let arch = std::env::consts::ARCH
        .try_into()
        .map_err(|e: seccompiler::BackendError| e.to_string())?;
    let mut refused: BTreeMap<i64, Vec<SeccompRule>> = denied_system_calls()
        .into_iter()
        .map(|call| (call, Vec::new()))
        .collect();
    // New namespaces through clone's flags (clone3's flags are behind a pointer: it is refused
    // with ENOSYS below, and the C library falls back to clone).
    let namespaces = [
        libc::CLONE_NEWNS,
        libc::CLONE_NEWUTS,
        libc::CLONE_NEWIPC,
        libc::CLONE_NEWUSER,
        libc::CLONE_NEWPID,
        libc::CLONE_NEWNET,
        libc::CLONE_NEWCGROUP,
    ];
    let mut clone_rules = Vec::new();
    for flag in namespaces {
        let flag = u64::from(flag.cast_unsigned());
        clone_rules.push(
            SeccompRule::new(vec![condition(0, SeccompCmpOp::MaskedEq(flag), flag)?])
                .map_err(|e| e.to_string())?,
        );
    }
    refused.insert(libc::SYS_clone, clone_rules);
    if !network {
        // Unix sockets only: the app serves gRPC on one; no IP, netlink, packet, ... sockets.
        let unix = u64::from(libc::AF_UNIX.cast_unsigned());
        refused.insert(
            libc::SYS_socket,
            vec![
                SeccompRule::new(vec![condition(0, SeccompCmpOp::Ne, unix)?])
                    .map_err(|e| e.to_string())?,
            ],
        );
        // A server never connects; refusing connect keeps the app off the Unix sockets of the
        // desktop (the session bus, X11, ...), which landlock only confines from ABI 9.
        refused.insert(libc::SYS_connect, Vec::new());
    }
    let deny: BpfProgram = SeccompFilter::new(
        refused,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM.cast_unsigned()),
        arch,
    )
    .and_then(BpfProgram::try_from)
    .map_err(|e| e.to_string())?;
    let clone3: BpfProgram = SeccompFilter::new(
        [(libc::SYS_clone3, Vec::new())].into(),
        SeccompAction::Allow,
        SeccompAction::Errno(libc::ENOSYS.cast_unsigned()),
        arch,
    )
    .and_then(BpfProgram::try_from)
    .map_err(|e| e.to_string())?;
    let mut programs = vec![deny, clone3];
    if let Some(x32) = refuse_x32() {
        programs.push(x32);
    }
    for program in &programs {
        seccompiler::apply_filter(program).map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// On x86-64 the x32 ABI reaches the same system calls under numbers with bit 30 set, which the
/// lists above do not name: refuse every x32 call (no app is built for x32).
#[cfg(target_arch = "x86_64")]
fn refuse_x32() -> Option<BpfProgram> {
    const LOAD_WORD: u16 = 0x20; // BPF_LD (0) | BPF_W (0) | BPF_ABS
    const JUMP_EQUAL: u16 = 0x05 | 0x10; // BPF_JMP | BPF_JEQ | BPF_K
    const JUMP_GREATER_EQUAL: u16 = 0x05 | 0x30; // BPF_JMP | BPF_JGE | BPF_K
    const RETURN: u16 = 0x06; // BPF_RET | BPF_K
    const ARCH_OFFSET: u32 = 4; // seccomp_data.arch
    const NUMBER_OFFSET: u32 = 0; // seccomp_data.nr
    const AUDIT_ARCH_X86_64: u32 = 0xC000_003E;
    const X32_SYSCALL_BIT: u32 = 0x4000_0000;
    let instruction = |code, jt, jf, k| sock_filter { code, jt, jf, k };
    Some(vec![
        instruction(LOAD_WORD, 0, 0, ARCH_OFFSET),
        instruction(JUMP_EQUAL, 0, 3, AUDIT_ARCH_X86_64),
        instruction(LOAD_WORD, 0, 0, NUMBER_OFFSET),
        instruction(JUMP_GREATER_EQUAL, 0, 1, X32_SYSCALL_BIT),
        instruction(
            RETURN,
            0,
            0,
            libc::SECCOMP_RET_ERRNO | libc::ENOSYS.cast_unsigned(),
        ),
        instruction(RETURN, 0, 0, libc::SECCOMP_RET_ALLOW),
    ])
}

#[cfg(not(target_arch = "x86_64"))]
fn refuse_x32() -> Option<BpfProgram> {
    None
}

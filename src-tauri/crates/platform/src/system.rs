//! Facts about the machine (OS, kernel, host, CPU, memory, disks, uptime through sysinfo on
//! every platform; battery, network and the dark/light preference through the desktop's
//! services where present), screen brightness where there is a backlight, and session control
//! (lock, suspend).

use crate::error::{Error, Result};

/// The desktop-service facts and session control. Facts a machine lacks are `None`.
#[allow(async_fn_in_trait)]
pub trait SystemServices {
    /// Battery and power: `"battery 81% discharging"`, or `None` without a battery service.
    async fn power(&self) -> Option<String> {
        None
    }
    /// Network state: `"connected (wired: Home)"`.
    async fn network(&self) -> Option<String> {
        None
    }
    /// The person's colour-scheme preference: `dark`, `light` or `no preference`.
    async fn appearance(&self) -> Option<String> {
        None
    }
    /// The screen's brightness: `"70% (7 of 10 on acpi_video0, firmware)"`.
    async fn brightness(&self) -> Result<String> {
        Err(Error::unsupported("brightness"))
    }
    /// Sets the screen's brightness to `percent` (0-100).
    async fn set_brightness(&self, percent: u32) -> Result<String> {
        let _ = percent;
        Err(Error::unsupported("brightness"))
    }
    async fn lock(&self) -> Result<String> {
        Err(Error::unsupported("locking the screen"))
    }
    async fn suspend(&self) -> Result<String> {
        Err(Error::unsupported("suspending"))
    }
}

/// OS, kernel, host, CPU, memory, disks and uptime, one fact a line.
pub fn machine_facts() -> String {
    use sysinfo::{Disks, System};
    let mut system = System::new();
    system.refresh_memory();
    system.refresh_cpu_list(sysinfo::CpuRefreshKind::nothing());
    let gib = |bytes: u64| bytes as f64 / (1u64 << 30) as f64;
    let mut lines = vec![
        format!(
            "os: {}",
            System::long_os_version().unwrap_or_else(|| std::env::consts::OS.into())
        ),
        format!("kernel: {}", System::kernel_long_version()),
        format!(
            "host: {}",
            System::host_name().unwrap_or_else(|| "?".into())
        ),
        format!("arch: {}", System::cpu_arch()),
    ];
    let cpus = system.cpus();
    let brand = cpus
        .first()
        .map(|c| c.brand().trim().to_string())
        .filter(|b| !b.is_empty())
        .unwrap_or_else(|| "unknown".into());
    lines.push(format!("cpu: {brand}, {} logical cores", cpus.len()));
    let load = System::load_average();
    if load.one > 0.0 || load.five > 0.0 {
        lines.push(format!(
            "load: {:.2} {:.2} {:.2}",
            load.one, load.five, load.fifteen
        ));
    }
    lines.push(format!(
        "memory: {:.1} GiB used of {:.1} GiB ({:.1} GiB available)",
        gib(system.used_memory()),
        gib(system.total_memory()),
        gib(system.available_memory())
    ));
    if system.total_swap() > 0 {
        lines.push(format!(
            "swap: {:.1} GiB used of {:.1} GiB",
            gib(system.used_swap()),
            gib(system.total_swap())
        ));
    }
    let disks = Disks::new_with_refreshed_list();
    for disk in disks.list().iter().filter(|d| d.total_space() > 0).take(12) {
        lines.push(format!(
            "disk {}: {:.1} GiB free of {:.1} GiB ({})",
            disk.mount_point().display(),
            gib(disk.available_space()),
            gib(disk.total_space()),
            disk.file_system().to_string_lossy()
        ));
    }
    let uptime = System::uptime();
    lines.push(format!(
        "uptime: {}d {}h {}m",
        uptime / 86_400,
        uptime % 86_400 / 3600,
        uptime % 3600 / 60
    ));
    lines.join("\n")
}

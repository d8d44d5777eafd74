//! Reading the command line. Only `--data-dir` is understood; everything else is ignored so that
//! launchers (WebDriver, desktop files) can pass their own arguments.

use std::ffi::OsString;
use std::path::PathBuf;

/// The data directory given as `--data-dir <path>` or `--data-dir=<path>`, if any. `None` leaves
/// the choice to the core: `$OSPREY_DATA_DIR`, then the platform default.
pub fn data_dir_from_args(args: impl IntoIterator<Item = OsString>) -> Option<PathBuf> {
    let mut args = args.into_iter();
    let mut found = None;
    while let Some(arg) = args.next() {
        if arg == "--data-dir" {
            found = args.next().map(PathBuf::from);
        } else if let Some(value) = arg.to_str().and_then(|a| a.strip_prefix("--data-dir=")) {
            found = Some(PathBuf::from(value));
        }
    }
    found.filter(|path| !path.as_os_str().is_empty())
}

/// Whether this launch is the person's everyday Osprey (no `--data-dir`, no `$OSPREY_DATA_DIR`):
/// only then is it a single instance, a second launch focusing the first. A launch on another
/// data folder is a separate profile (tests, a second account) and runs beside it; two launches
/// on one folder are still kept apart by the core's lock on the folder.
pub fn single_instance(
    explicit_data_dir: Option<&std::path::Path>,
    env_data_dir: Option<OsString>,
) -> bool {
    explicit_data_dir.is_none() && env_data_dir.is_none_or(|dir| dir.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_default_data_folder_is_single_instance() {
        assert!(single_instance(None, None));
        assert!(single_instance(None, Some(OsString::new())));
        assert!(!single_instance(Some(std::path::Path::new("/a")), None));
        assert!(!single_instance(None, Some(OsString::from("/b"))));
    }

    fn args(list: &[&str]) -> Vec<OsString> {
        list.iter().map(OsString::from).collect()
    }

    #[test]
    fn reads_both_spellings_and_the_last_one_wins() {
        assert_eq!(
            data_dir_from_args(args(&["--data-dir", "/a"])),
            Some(PathBuf::from("/a"))
        );
        assert_eq!(
            data_dir_from_args(args(&["--data-dir=/b"])),
            Some(PathBuf::from("/b"))
        );
        assert_eq!(
            data_dir_from_args(args(&["--data-dir=/a", "--other", "--data-dir", "/c"])),
            Some(PathBuf::from("/c"))
        );
    }

    #[test]
    fn absent_or_empty_means_none() {
        assert_eq!(data_dir_from_args(args(&[])), None);
        assert_eq!(data_dir_from_args(args(&["--verbose"])), None);
        assert_eq!(data_dir_from_args(args(&["--data-dir"])), None);
        assert_eq!(data_dir_from_args(args(&["--data-dir="])), None);
    }
}

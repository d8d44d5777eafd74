//! The unconditional safeguard: runs after the approval policy on every call, under every
//! policy level including `full`, and cannot be switched off. It refuses privilege escalation,
//! destructive deletes, device writes, disk formatting, fork bombs, and writes to protected
//! paths, seeing through shell syntax with [`super::shell_syntax`].
//!
//! STUB: replaced by the safeguard work; the API below is the contract.

use std::path::Path;

use osprey_types::ErrorCode;

use super::Refusal;
use super::paths::PathGuard;
use super::shell_syntax::CommandAnalysis;

#[derive(Clone, Debug)]
pub struct Safeguard {
    paths: PathGuard,
}

impl Safeguard {
    pub fn new(paths: PathGuard) -> Self {
        Safeguard { paths }
    }

    pub fn paths(&self) -> &PathGuard {
        &self.paths
    }

    /// Checks a parsed shell command.
    pub fn check_command(&self, analysis: &CommandAnalysis) -> Result<(), Refusal> {
        for c in &analysis.commands {
            if c.program == "sudo" {
                return Err(Refusal::new(
                    ErrorCode::SafeguardBlocked,
                    "privilege escalation",
                ));
            }
        }
        Ok(())
    }

    /// Checks a path a call will write.
    pub fn check_write_path(&self, path: &Path) -> Result<(), Refusal> {
        self.paths.check_write(path).map(|_| ())
    }
}

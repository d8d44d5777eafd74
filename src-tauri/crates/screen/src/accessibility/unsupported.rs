//! The accessibility backend for platforms without a native one (anything but Linux, macOS and
//! Windows): every tree is empty with a note saying so, so `see` still returns the screenshot
//! and coordinates still work.

use futures::future::BoxFuture;

use super::{AccessibilityBackend, AccessibilityTree, AccessibleNode, NodeRef, TreeLimits};
use crate::capture::WindowInfo;
use crate::error::{Error, Result};

#[derive(Clone, Debug, Default)]
pub struct NoAccessibility;

impl NoAccessibility {
    pub fn new(_session_bus_address: Option<String>) -> NoAccessibility {
        NoAccessibility
    }
}

impl AccessibilityBackend for NoAccessibility {
    fn window_tree<'a>(
        &'a self,
        _window: &'a WindowInfo,
        _limits: TreeLimits,
    ) -> BoxFuture<'a, Result<AccessibilityTree>> {
        Box::pin(async {
            Ok(AccessibilityTree {
                complete: false,
                notes: vec![
                    "the accessibility tree is not available on this platform yet; use coordinates"
                        .into(),
                ],
                ..AccessibilityTree::default()
            })
        })
    }

    fn refresh<'a>(&'a self, _node: &'a NodeRef) -> BoxFuture<'a, Result<Option<AccessibleNode>>> {
        Box::pin(async { Err(Error::Unsupported("reading accessibility elements")) })
    }

    fn do_action<'a>(&'a self, _node: &'a NodeRef, _action: &'a str) -> BoxFuture<'a, Result<()>> {
        Box::pin(async { Err(Error::Unsupported("accessibility actions")) })
    }

    fn focus<'a>(&'a self, _node: &'a NodeRef) -> BoxFuture<'a, Result<bool>> {
        Box::pin(async { Err(Error::Unsupported("accessibility focus")) })
    }
}

//! The shared half of the backends whose platform API answers one element at a time and blocks
//! (macOS AX, Windows UI Automation). A worker thread owns the platform objects (a COM apartment's
//! interfaces and AX references stay on the thread that made them); every request is a job for
//! that thread. Trees are walked breadth-first within the depth, node and time limits, and an
//! element is referred to by its window's key and the child-index path from the window
//! (`hwnd:1234#0.3.1`), resolved again for later actions: neither platform hands out references
//! that outlive the process or serialise, and a changed path is caught by the live re-check in
//! `actions.rs`. Compiled on every target so its logic is tested on Linux with a scripted tree.

use std::sync::Mutex;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use futures::future::BoxFuture;

use super::{
    AccessibilityBackend, AccessibilityTree, AccessibleNode, NodeRef, States, TreeLimits, pre_order,
};
use crate::capture::WindowInfo;
use crate::error::{Error, Result};
use crate::geometry::Rect;

/// What a platform reports about one element.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Facts {
    pub role: accesskit::Role,
    pub platform_role: String,
    pub name: String,
    pub description: String,
    pub value: Option<String>,
    pub states: States,
    pub bounds: Option<Rect>,
    pub actions: Vec<String>,
}

/// One platform's element API, used from the worker thread only.
pub trait ElementTree {
    type Element;
    /// The accessible element of a window and a key that finds it again (`None`: the window
    /// has no accessible counterpart).
    fn window_root(&mut self, window: &WindowInfo) -> Result<Option<(Self::Element, String)>>;
    /// The element a key from [`ElementTree::window_root`] names, if it still exists.
    fn root_by_key(&mut self, key: &str) -> Result<Option<Self::Element>>;
    /// The element's facts; `None` when it vanished.
    fn facts(&mut self, element: &Self::Element) -> Option<Facts>;
    fn children(&mut self, element: &Self::Element) -> Vec<Self::Element>;
    /// Runs a named action (one of [`Facts::actions`]).
    fn do_action(&mut self, element: &Self::Element, action: &str) -> Result<()>;
    /// Moves keyboard focus to the element; false when it cannot take it.
    fn focus(&mut self, element: &Self::Element) -> Result<bool>;
}

/// The reference of the element at `path` below the window `key`.
fn reference(key: &str, path: &str) -> NodeRef {
    NodeRef(format!("{key}#{path}"))
}

/// Splits a reference into the window key and the child indices.
fn parse_reference(node: &NodeRef) -> Result<(&str, Vec<usize>)> {
    let bad = || Error::InvalidInput(format!("{} is not an element reference", node.0));
    let (key, path) = node.0.rsplit_once('#').ok_or_else(bad)?;
    let indices = if path.is_empty() {
        Vec::new()
    } else {
        path.split('.')
            .map(|i| i.parse::<usize>().map_err(|_| bad()))
            .collect::<Result<_>>()?
    };
    Ok((key, indices))
}

/// The element a reference names, by walking its path from the window again.
pub(crate) fn resolve<T: ElementTree>(tree: &mut T, node: &NodeRef) -> Result<Option<T::Element>> {
    let (key, indices) = parse_reference(node)?;
    let Some(mut element) = tree.root_by_key(key)? else {
        return Ok(None);
    };
    for index in indices {
        match tree.children(&element).into_iter().nth(index) {
            Some(child) => element = child,
            None => return Ok(None),
        }
    }
    Ok(Some(element))
}

fn node_from(facts: Facts, node: NodeRef, depth: u32) -> AccessibleNode {
    AccessibleNode {
        node,
        role: facts.role,
        platform_role: facts.platform_role,
        name: facts.name,
        description: facts.description,
        value: facts.value,
        states: facts.states,
        bounds: facts.bounds,
        actions: facts.actions,
        children: Vec::new(),
        depth,
    }
}

/// Walks a window's tree breadth-first within the limits: subtrees of elements that are not
/// showing are not entered, and the walk stops at the node limit, below the depth limit and at
/// the deadline (checked before every element), saying so in the notes.
pub(crate) fn walk<T: ElementTree>(
    tree: &mut T,
    root: T::Element,
    key: &str,
    limits: TreeLimits,
    deadline: Instant,
) -> AccessibilityTree {
    let mut out = AccessibilityTree {
        complete: true,
        ..AccessibilityTree::default()
    };
    let mut nodes: Vec<AccessibleNode> = Vec::new();
    let mut frontier: Vec<(Option<usize>, T::Element, String, u32)> =
        vec![(None, root, String::new(), 0)];
    let mut cut_by_depth = false;
    let mut failed = 0usize;
    'levels: while !frontier.is_empty() {
        let room = limits.max_nodes.saturating_sub(nodes.len());
        if frontier.len() > room {
            frontier.truncate(room);
            out.complete = false;
            out.notes.push(format!(
                "stopped at {} elements (the limit); the tree is partial",
                limits.max_nodes
            ));
        }
        let mut next = Vec::new();
        for (parent, element, path, depth) in frontier {
            if Instant::now() >= deadline {
                out.complete = false;
                out.notes.push(format!(
                    "the application did not answer within {:?}; the tree is partial ({} elements)",
                    limits.timeout,
                    nodes.len()
                ));
                break 'levels;
            }
            let Some(facts) = tree.facts(&element) else {
                failed += 1;
                continue;
            };
            let showing = depth == 0 || facts.states.showing;
            let index = nodes.len();
            nodes.push(node_from(facts, reference(key, &path), depth));
            if let Some(parent) = parent {
                nodes[parent].children.push(index);
            }
            if !showing {
                continue;
            }
            let children = tree.children(&element);
            if children.is_empty() {
                continue;
            }
            if depth >= limits.max_depth {
                cut_by_depth = true;
                continue;
            }
            for (position, child) in children.into_iter().enumerate() {
                let child_path = if path.is_empty() {
                    position.to_string()
                } else {
                    format!("{path}.{position}")
                };
                next.push((Some(index), child, child_path, depth + 1));
            }
        }
        frontier = next;
    }
    if cut_by_depth {
        out.complete = false;
        out.notes.push(format!(
            "elements deeper than {} levels were left out",
            limits.max_depth
        ));
    }
    if failed > 0 {
        out.notes.push(format!(
            "{failed} elements vanished or failed to answer during the walk"
        ));
    }
    out.nodes = pre_order(nodes);
    out
}

type Job<T> = Box<dyn FnOnce(&mut T) + Send>;

/// A thread that owns a platform's element API and runs jobs on it one at a time.
pub(crate) struct Worker<T> {
    jobs: Mutex<mpsc::Sender<Job<T>>>,
    startup_error: std::sync::Arc<Mutex<Option<String>>>,
}

impl<T: 'static> Worker<T> {
    /// Starts the thread; `make` builds the platform state on it (COM initialisation, the
    /// automation object). When it fails, every job answers with its error.
    pub(crate) fn spawn(name: &str, make: impl FnOnce() -> Result<T> + Send + 'static) -> Self {
        let (sender, receiver) = mpsc::channel::<Job<T>>();
        let startup_error = std::sync::Arc::new(Mutex::new(None));
        let errors = startup_error.clone();
        let spawned =
            std::thread::Builder::new()
                .name(name.to_string())
                .spawn(move || match make() {
                    Ok(mut state) => {
                        for job in receiver {
                            job(&mut state);
                        }
                    }
                    Err(error) => {
                        if let Ok(mut slot) = errors.lock() {
                            *slot = Some(error.to_string());
                        }
                        // Dropping the jobs tells their callers.
                        for job in receiver {
                            drop(job);
                        }
                    }
                });
        if let Err(error) = spawned
            && let Ok(mut slot) = startup_error.lock()
        {
            *slot = Some(format!("could not start the accessibility thread: {error}"));
        }
        Worker {
            jobs: Mutex::new(sender),
            startup_error,
        }
    }

    /// Runs `work` on the thread and waits for it at most `limit`.
    pub(crate) async fn run<R: Send + 'static>(
        &self,
        limit: Duration,
        work: impl FnOnce(&mut T) -> R + Send + 'static,
    ) -> Result<R> {
        let (sender, receiver) = tokio::sync::oneshot::channel();
        let job: Job<T> = Box::new(move |state| {
            let _ = sender.send(work(state));
        });
        self.jobs
            .lock()
            .map_err(|_| Error::Accessibility("the accessibility thread failed".into()))?
            .send(job)
            .map_err(|_| self.stopped())?;
        match tokio::time::timeout(limit, receiver).await {
            Ok(Ok(result)) => Ok(result),
            Ok(Err(_)) => Err(self.stopped()),
            Err(_) => Err(Error::Timeout {
                what: "the accessibility call".into(),
                after: limit,
            }),
        }
    }

    fn stopped(&self) -> Error {
        let reason = self
            .startup_error
            .lock()
            .ok()
            .and_then(|slot| slot.clone())
            .unwrap_or_else(|| "the accessibility thread stopped".into());
        Error::Accessibility(reason)
    }
}

/// How long a single request (refresh, action, focus) may take.
const REQUEST_LIMIT: Duration = Duration::from_secs(3);
/// Extra time over a walk's deadline for the one platform call that may be in progress at it.
const WALK_SLACK: Duration = Duration::from_millis(500);

/// An [`AccessibilityBackend`] over any [`ElementTree`] on its own worker thread.
pub struct BlockingBackend<T> {
    worker: Worker<T>,
}

impl<T: ElementTree + 'static> BlockingBackend<T> {
    pub(crate) fn spawn(name: &str, make: impl FnOnce() -> Result<T> + Send + 'static) -> Self {
        BlockingBackend {
            worker: Worker::spawn(name, make),
        }
    }
}

impl<T: ElementTree + 'static> AccessibilityBackend for BlockingBackend<T> {
    fn window_tree<'a>(
        &'a self,
        window: &'a WindowInfo,
        limits: TreeLimits,
    ) -> BoxFuture<'a, Result<AccessibilityTree>> {
        let window = window.clone();
        Box::pin(async move {
            let start = Instant::now();
            let deadline = limits.deadline_from(start);
            let title = window.title.clone();
            let walked = self
                .worker
                .run(limits.timeout + WALK_SLACK, move |tree| {
                    Ok::<_, Error>(
                        tree.window_root(&window)?
                            .map(|(root, key)| walk(tree, root, &key, limits, deadline)),
                    )
                })
                .await;
            let mut tree = match walked {
                Ok(Ok(Some(tree))) => tree,
                Ok(Ok(None)) => AccessibilityTree {
                    notes: vec![format!(
                        "no accessible window matched {title:?}: the application may not expose accessibility"
                    )],
                    ..AccessibilityTree::default()
                },
                Ok(Err(error)) => return Err(error),
                Err(Error::Timeout { .. }) => AccessibilityTree {
                    notes: vec![format!(
                        "the application did not answer within {:?}; no elements",
                        limits.timeout
                    )],
                    ..AccessibilityTree::default()
                },
                Err(error) => return Err(error),
            };
            tree.elapsed = start.elapsed();
            Ok(tree)
        })
    }

    fn refresh<'a>(&'a self, node: &'a NodeRef) -> BoxFuture<'a, Result<Option<AccessibleNode>>> {
        let node = node.clone();
        Box::pin(async move {
            self.worker
                .run(REQUEST_LIMIT, move |tree| {
                    Ok(resolve(tree, &node)?
                        .and_then(|element| tree.facts(&element))
                        .map(|facts| node_from(facts, node.clone(), 0)))
                })
                .await?
        })
    }

    fn do_action<'a>(&'a self, node: &'a NodeRef, action: &'a str) -> BoxFuture<'a, Result<()>> {
        let node = node.clone();
        let action = action.to_string();
        Box::pin(async move {
            self.worker
                .run(REQUEST_LIMIT, move |tree| {
                    let element = resolve(tree, &node)?.ok_or_else(|| {
                        Error::Stale(format!("element {} no longer exists", node.0))
                    })?;
                    tree.do_action(&element, &action)
                })
                .await?
        })
    }

    fn focus<'a>(&'a self, node: &'a NodeRef) -> BoxFuture<'a, Result<bool>> {
        let node = node.clone();
        Box::pin(async move {
            self.worker
                .run(REQUEST_LIMIT, move |tree| match resolve(tree, &node)? {
                    Some(element) => tree.focus(&element),
                    None => Ok(false),
                })
                .await?
        })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    /// A scripted tree: element `i` has the children listed at `i`; element names are `e<i>`.
    /// Element 3 is not showing; `slow` makes every fact take that long (a hung application).
    struct Scripted {
        children: Vec<Vec<usize>>,
        removed: Vec<usize>,
        slow: Duration,
        actions: Arc<AtomicUsize>,
    }

    fn scripted() -> Scripted {
        Scripted {
            // 0 -> 1, 2, 3; 1 -> 4, 5; 3 -> 6 (hidden); 5 -> 7 -> 8
            children: vec![
                vec![1, 2, 3],
                vec![4, 5],
                vec![],
                vec![6],
                vec![],
                vec![7],
                vec![],
                vec![8],
                vec![],
            ],
            removed: Vec::new(),
            slow: Duration::ZERO,
            actions: Arc::new(AtomicUsize::new(0)),
        }
    }

    impl ElementTree for Scripted {
        type Element = usize;

        fn window_root(&mut self, window: &WindowInfo) -> Result<Option<(usize, String)>> {
            Ok((window.title == "Form").then(|| (0, format!("window:{}", window.id))))
        }

        fn root_by_key(&mut self, key: &str) -> Result<Option<usize>> {
            Ok((key == "window:7").then_some(0))
        }

        fn facts(&mut self, element: &usize) -> Option<Facts> {
            std::thread::sleep(self.slow);
            if self.removed.contains(element) {
                return None;
            }
            Some(Facts {
                role: if *element == 2 {
                    accesskit::Role::Button
                } else {
                    accesskit::Role::GenericContainer
                },
                platform_role: "scripted".into(),
                name: format!("e{element}"),
                states: States {
                    showing: *element != 3,
                    ..States::default()
                },
                actions: if *element == 2 {
                    vec!["press".into()]
                } else {
                    Vec::new()
                },
                ..Facts::default()
            })
        }

        fn children(&mut self, element: &usize) -> Vec<usize> {
            self.children[*element]
                .iter()
                .copied()
                .filter(|c| !self.removed.contains(c))
                .collect()
        }

        fn do_action(&mut self, element: &usize, action: &str) -> Result<()> {
            if *element == 2 && action == "press" {
                self.actions.fetch_add(1, Ordering::SeqCst);
                Ok(())
            } else {
                Err(Error::InvalidInput(format!("no action {action}")))
            }
        }

        fn focus(&mut self, element: &usize) -> Result<bool> {
            Ok(*element == 2)
        }
    }

    fn window(title: &str) -> WindowInfo {
        WindowInfo {
            id: 7,
            title: title.into(),
            app_name: "scripted".into(),
            pid: Some(1),
            bounds: Rect::new(0, 0, 100, 100),
            focused: true,
            minimized: false,
        }
    }

    fn names(tree: &AccessibilityTree) -> Vec<&str> {
        tree.nodes.iter().map(|n| n.name.as_str()).collect()
    }

    fn block_on<F: std::future::Future>(future: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(future)
    }

    #[test]
    fn walk_is_pre_order_skips_hidden_subtrees_and_names_paths() {
        let mut tree = scripted();
        let far = Instant::now() + Duration::from_secs(10);
        let out = walk(&mut tree, 0, "window:7", TreeLimits::default(), far);
        assert!(out.complete, "{:?}", out.notes);
        // e6 is below the hidden e3: not entered.
        assert_eq!(
            names(&out),
            ["e0", "e1", "e4", "e5", "e7", "e8", "e2", "e3"]
        );
        let e8 = &out.nodes[5];
        assert_eq!(e8.node, NodeRef("window:7#0.1.0.0".into()));
        assert_eq!(e8.depth, 4);
        assert_eq!(out.nodes[0].children, [1, 6, 7]);
        // The reference resolves back to the same element.
        assert_eq!(resolve(&mut tree, &e8.node).unwrap(), Some(8));
        assert_eq!(
            resolve(&mut tree, &NodeRef("window:7#".into())).unwrap(),
            Some(0)
        );
        assert_eq!(
            resolve(&mut tree, &NodeRef("window:7#0.9".into())).unwrap(),
            None
        );
        assert_eq!(
            resolve(&mut tree, &NodeRef("window:8#0".into())).unwrap(),
            None
        );
        assert!(resolve(&mut tree, &NodeRef("no-separator".into())).is_err());
    }

    #[test]
    fn walk_stops_at_the_node_and_depth_limits_with_notes() {
        let far = Instant::now() + Duration::from_secs(10);
        let few = TreeLimits {
            max_nodes: 3,
            ..TreeLimits::default()
        };
        let out = walk(&mut scripted(), 0, "k", few, far);
        assert_eq!(names(&out), ["e0", "e1", "e2"]);
        assert!(!out.complete);
        assert!(
            out.notes[0].contains("stopped at 3 elements"),
            "{:?}",
            out.notes
        );

        let shallow = TreeLimits {
            max_depth: 1,
            ..TreeLimits::default()
        };
        let out = walk(&mut scripted(), 0, "k", shallow, far);
        assert_eq!(names(&out), ["e0", "e1", "e2", "e3"]);
        assert!(
            out.notes[0].contains("deeper than 1 levels"),
            "{:?}",
            out.notes
        );
    }

    #[test]
    fn a_slow_application_yields_a_partial_tree_at_the_deadline() {
        let mut tree = scripted();
        tree.slow = Duration::from_millis(30);
        let limits = TreeLimits {
            timeout: Duration::from_millis(100),
            ..TreeLimits::default()
        };
        let start = Instant::now();
        let out = walk(&mut tree, 0, "k", limits, limits.deadline_from(start));
        assert!(start.elapsed() < Duration::from_millis(200));
        assert!(!out.complete && !out.nodes.is_empty() && out.nodes.len() < 8);
        assert!(out.notes[0].contains("did not answer"), "{:?}", out.notes);
    }

    #[test]
    fn the_backend_walks_refreshes_acts_and_reports_vanished_elements() {
        let actions = Arc::new(AtomicUsize::new(0));
        let counter = actions.clone();
        let backend = BlockingBackend::spawn("test-accessibility", move || {
            Ok(Scripted {
                actions: counter,
                ..scripted()
            })
        });
        block_on(async {
            let tree = backend
                .window_tree(&window("Form"), TreeLimits::default())
                .await
                .unwrap();
            assert_eq!(tree.nodes.len(), 8);
            let button = tree.find(accesskit::Role::Button, "e2").unwrap().clone();
            backend.do_action(&button.node, "press").await.unwrap();
            assert_eq!(actions.load(Ordering::SeqCst), 1);
            assert!(backend.do_action(&button.node, "fly").await.is_err());
            assert!(backend.focus(&button.node).await.unwrap());
            let now = backend.refresh(&button.node).await.unwrap().unwrap();
            assert_eq!(now.name, "e2");
            let gone = NodeRef("window:7#5".into());
            assert_eq!(backend.refresh(&gone).await.unwrap(), None);
            assert!(matches!(
                backend.do_action(&gone, "press").await,
                Err(Error::Stale(_))
            ));

            let other = backend
                .window_tree(&window("Elsewhere"), TreeLimits::default())
                .await
                .unwrap();
            assert!(other.nodes.is_empty());
            assert!(
                other.notes[0].contains("no accessible window"),
                "{:?}",
                other.notes
            );
        });
    }

    #[test]
    fn a_backend_whose_platform_failed_to_start_says_why() {
        let backend: BlockingBackend<Scripted> = BlockingBackend::spawn("test-failed", || {
            Err(Error::Accessibility(
                "UI Automation is not available".into(),
            ))
        });
        let error = block_on(backend.window_tree(&window("Form"), TreeLimits::default()))
            .unwrap_err()
            .to_string();
        assert!(error.contains("UI Automation is not available"), "{error}");
    }

    #[test]
    fn a_hung_worker_call_times_out_the_walk_with_a_note() {
        let backend = BlockingBackend::spawn("test-hung", || {
            Ok(Scripted {
                slow: Duration::from_millis(900),
                ..scripted()
            })
        });
        let limits = TreeLimits {
            timeout: Duration::from_millis(50),
            ..TreeLimits::default()
        };
        let start = Instant::now();
        let tree = block_on(backend.window_tree(&window("Form"), limits)).unwrap();
        // One element's facts take 900 ms, past the deadline and its slack.
        assert!(
            start.elapsed() < Duration::from_millis(800),
            "{:?}",
            start.elapsed()
        );
        assert!(tree.nodes.is_empty());
        assert!(tree.notes[0].contains("did not answer"), "{:?}", tree.notes);
    }
}

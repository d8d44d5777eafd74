use std::time::{Duration, Instant};

use accesskit::Role;
use osprey_screen::accessibility::{AccessibilityTree, TreeLimits};

use crate::harness::{FixtureApp, block_on, environment};

/// The names of the nodes with this role, sorted (GTK lists a grid's children last-first).
fn names(tree: &AccessibilityTree, role: Role) -> Vec<&str> {
    let mut names: Vec<&str> = tree
        .nodes
        .iter()
        .filter(|n| n.role == role)
        .map(|n| n.name.as_str())
        .collect();
    names.sort();
    names
}

#[test]
fn gtk_form_tree_has_roles_names_states_bounds_and_actions() {
    let (environment, _lock) = environment();
    let app = FixtureApp::form(environment, "tree", &[]);
    let desktop = environment.desktop();
    let tree = block_on(desktop.tree(&app.window, TreeLimits::default())).unwrap();
    assert!(tree.complete, "notes: {:?}", tree.notes);
    let root = &tree.nodes[0];
    assert_eq!(root.role, Role::Window);
    assert_eq!(root.name, app.title);

    assert_eq!(names(&tree, Role::Button), ["Cancel", "Save"]);
    assert_eq!(names(&tree, Role::TextInput), ["Email", "Name"]);
    assert_eq!(names(&tree, Role::CheckBox), ["Subscribe"]);
    assert!(
        names(&tree, Role::ComboBox).contains(&"Colour"),
        "{tree:#?}"
    );
    assert_eq!(names(&tree, Role::ListItem).len(), 3);
    assert!(names(&tree, Role::Label).contains(&"Banana"));

    let save = tree.find(Role::Button, "Save").unwrap();
    assert!(save.actions.iter().any(|a| a == "click"), "{save:?}");
    assert!(save.states.enabled && save.states.showing && save.states.visible);
    let bounds = save.bounds.expect("buttons have bounds");
    assert!(
        app.window.bounds.intersection(&bounds) == Some(bounds),
        "Save {bounds} lies inside the window {}",
        app.window.bounds
    );
    let subscribe = tree.find(Role::CheckBox, "Subscribe").unwrap();
    assert!(!subscribe.states.checked);
    let name = tree.find(Role::TextInput, "Name").unwrap();
    assert!(name.states.editable);
    assert_eq!(name.value.as_deref(), Some(""));
    // Reading order in the tree: the Name field is above the Save button.
    assert!(name.bounds.unwrap().y < bounds.y);
    // Children point at their own nodes, pre-order: every child comes after its parent.
    for (index, node) in tree.nodes.iter().enumerate() {
        for child in &node.children {
            assert!(*child > index);
            assert_eq!(tree.nodes[*child].depth, node.depth + 1);
        }
    }
}

#[test]
fn limits_cut_the_walk_with_a_note() {
    let (environment, _lock) = environment();
    let app = FixtureApp::form(environment, "limits", &[]);
    let desktop = environment.desktop();
    let few = TreeLimits {
        max_nodes: 5,
        ..TreeLimits::default()
    };
    let tree = block_on(desktop.tree(&app.window, few)).unwrap();
    assert_eq!(tree.nodes.len(), 5);
    assert!(!tree.complete);
    assert!(
        tree.notes.iter().any(|n| n.contains("5 elements")),
        "{:?}",
        tree.notes
    );

    let shallow = TreeLimits {
        max_depth: 1,
        ..TreeLimits::default()
    };
    let tree = block_on(desktop.tree(&app.window, shallow)).unwrap();
    assert!(tree.nodes.iter().all(|n| n.depth <= 1));
    assert!(!tree.complete);
    assert!(
        tree.notes.iter().any(|n| n.contains("deeper than 1")),
        "{:?}",
        tree.notes
    );
}

#[test]
fn a_hung_application_cannot_stall_the_walk_past_its_deadline() {
    let (environment, _lock) = environment();
    let app = FixtureApp::form(environment, "hung", &[]);
    let desktop = environment.desktop();
    // Connect first, so the measured call is the walk alone.
    block_on(async {
        desktop
            .tree(&app.window, TreeLimits::default())
            .await
            .unwrap();
        app.signal("STOP");
        let limits = TreeLimits {
            timeout: Duration::from_millis(800),
            ..TreeLimits::default()
        };
        let start = Instant::now();
        let tree = desktop.tree(&app.window, limits).await.unwrap();
        let took = start.elapsed();
        app.signal("CONT");
        assert!(took < Duration::from_millis(1300), "took {took:?}");
        assert!(!tree.complete);
        assert!(
            tree.notes.iter().any(|n| n.contains("did not answer")),
            "{:?}",
            tree.notes
        );
    });
}

#[test]
fn the_cache_and_direct_connection_give_the_same_tree_as_the_plain_walk() {
    let (environment, _lock) = environment();
    let app = FixtureApp::form(environment, "cache", &["--buttons", "6"]);
    let desktop = environment.desktop();
    // Neither fast path: every element fetched in full, every request through the bus daemon.
    let walk_only = TreeLimits {
        use_cache: false,
        direct: false,
        ..TreeLimits::default()
    };
    let (cached, walked) = block_on(async {
        // The application builds its cache once the backend has registered as a client (on
        // connecting); until then walks go element by element.
        let end = Instant::now() + Duration::from_secs(10);
        let cached = loop {
            let tree = desktop
                .tree(&app.window, TreeLimits::default())
                .await
                .unwrap();
            if tree.from_cache > 0 || Instant::now() > end {
                break tree;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        let walked = desktop.tree(&app.window, walk_only).await.unwrap();
        (cached, walked)
    });
    assert!(
        cached.complete && walked.complete,
        "{:?} {:?}",
        cached.notes,
        walked.notes
    );
    // GTK 3 (at-spi2-atk) caches the window's skeleton: the frame, boxes, grid, entries,
    // checkbox, combo box, Save/Cancel; list rows and flow box children are fetched in full.
    assert!(
        cached.from_cache >= 10,
        "only {} of {} elements came from the cache",
        cached.from_cache,
        cached.nodes.len()
    );
    assert!(cached.from_cache < cached.nodes.len());
    assert_eq!(walked.from_cache, 0);
    // at-spi2-atk offers its own socket: the fast walk used it, the plain one did not.
    assert!(cached.direct && !walked.direct);
    assert_eq!(cached.nodes.len(), walked.nodes.len());
    for (a, b) in cached.nodes.iter().zip(&walked.nodes) {
        assert_eq!(a, b, "the two paths differ at {:?}", b.node);
    }
    let area = app.window.bounds;
    assert_eq!(
        osprey_screen::elements::assign_ids(&cached, area),
        osprey_screen::elements::assign_ids(&walked, area)
    );
}

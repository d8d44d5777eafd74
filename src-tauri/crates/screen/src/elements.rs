//! Element IDs: the accessibility tree flattened to the elements a person could act on, with
//! on-screen bounds, sorted in reading order (top to bottom in 10 px bands, then left to right)
//! and named by a role prefix and a per-prefix counter (`B1`, `B2`, `T1`). Identical trees give
//! identical IDs.

use accesskit::Role;
use serde::{Deserialize, Serialize};

use crate::accessibility::{AccessibilityTree, NodeRef, States};
use crate::geometry::Rect;

/// Height of the reading-order bands: elements whose tops are within the same band read left
/// to right.
pub const BAND_PIXELS: i32 = 10;

/// One element with an ID.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Element {
    pub id: String,
    pub role: Role,
    /// A short role word for the list (`button`, `text field`); derived from the role.
    #[serde(skip_deserializing, default)]
    pub kind: &'static str,
    pub name: String,
    /// True when the element has no name of its own and `name` is the text of its contents
    /// (so a live re-check expects the element itself to be still unnamed).
    #[serde(default)]
    pub name_from_contents: bool,
    pub value: Option<String>,
    /// Screen bounds.
    pub bounds: Rect,
    pub states: States,
    pub actions: Vec<String>,
    pub node: NodeRef,
}

/// The ID prefix of a role (the table in ARCHITECTURE.md), `None` for roles that never get one.
pub fn prefix(role: Role) -> Option<char> {
    Some(match role {
        Role::Button | Role::DefaultButton => 'B',
        Role::TextInput
        | Role::MultilineTextInput
        | Role::SearchInput
        | Role::PasswordInput
        | Role::EmailInput
        | Role::NumberInput
        | Role::PhoneNumberInput
        | Role::UrlInput
        | Role::DateInput
        | Role::DateTimeInput
        | Role::WeekInput
        | Role::MonthInput
        | Role::TimeInput
        | Role::SpinButton => 'T',
        Role::Link => 'L',
        Role::CheckBox | Role::Switch => 'C',
        Role::MenuItem | Role::MenuItemCheckBox | Role::MenuItemRadio | Role::MenuListOption => 'M',
        Role::Slider => 'S',
        Role::Tab => 'A',
        Role::RadioButton => 'R',
        Role::ComboBox | Role::EditableComboBox | Role::MenuListPopup => 'P',
        Role::Image => 'G',
        Role::Label | Role::Paragraph | Role::Heading | Role::TextRun => 'X',
        Role::Toolbar => 'O',
        Role::ListItem | Role::ListBoxOption | Role::TreeItem => 'I',
        Role::Cell | Role::GridCell | Role::Row | Role::ColumnHeader | Role::RowHeader => 'W',
        Role::ScrollBar => 'Z',
        Role::Group | Role::RadioGroup | Role::TabList => 'U',
        Role::Window | Role::Dialog | Role::AlertDialog => 'N',
        _ => return None,
    })
}

/// The word for a role in the element list.
pub fn kind(role: Role) -> &'static str {
    match prefix(role) {
        Some('B') => "button",
        Some('T') => "text field",
        Some('L') => "link",
        Some('C') => "checkbox",
        Some('M') => "menu item",
        Some('S') => "slider",
        Some('A') => "tab",
        Some('R') => "radio",
        Some('P') => "combo box",
        Some('G') => "image",
        Some('X') => "text",
        Some('O') => "toolbar",
        Some('I') => "list item",
        Some('W') => "table cell",
        Some('Z') => "scrollbar",
        Some('U') => "group",
        Some('N') => "window",
        _ => "element",
    }
}

/// Prefixes whose elements are always actionable; the rest need an action, an editable or
/// selectable state to get an ID. Windows, groups and toolbars are containers and never do.
fn always_actionable(prefix: char) -> bool {
    matches!(
        prefix,
        'B' | 'T' | 'L' | 'C' | 'M' | 'S' | 'A' | 'R' | 'P' | 'Z'
    )
}

/// Flattens the tree to actionable, visible elements inside `visible_area` (screen
/// coordinates), in reading order, with IDs.
pub fn assign_ids(tree: &AccessibilityTree, visible_area: Rect) -> Vec<Element> {
    let mut candidates: Vec<(usize, char, Rect)> = Vec::new();
    for (index, node) in tree.nodes.iter().enumerate() {
        let Some(prefix) = prefix(node.role) else {
            continue;
        };
        if matches!(prefix, 'N' | 'U' | 'O') {
            continue;
        }
        let actionable = always_actionable(prefix)
            || !node.actions.is_empty()
            || node.states.editable
            || node.states.selectable;
        if !actionable || !node.states.showing {
            continue;
        }
        let Some(bounds) = node.bounds.filter(|b| !b.is_empty()) else {
            continue;
        };
        let Some(visible) = bounds.intersection(&visible_area) else {
            continue;
        };
        // At least half visible, so the ID's box shows most of the element.
        let area = |r: &Rect| u64::from(r.width) * u64::from(r.height);
        if area(&visible) * 2 < area(&bounds) {
            continue;
        }
        candidates.push((index, prefix, bounds));
    }
    candidates.sort_by_key(|(index, _, b)| {
        (
            b.y.div_euclid(BAND_PIXELS),
            b.x,
            b.y,
            b.width,
            b.height,
            *index,
        )
    });
    let mut counters = [0u32; 26];
    candidates
        .into_iter()
        .map(|(index, prefix, bounds)| {
            let counter = &mut counters[(prefix as u8 - b'A') as usize];
            *counter += 1;
            let node = &tree.nodes[index];
            let unnamed = node.name.trim().is_empty();
            Element {
                id: format!("{prefix}{counter}"),
                role: node.role,
                kind: kind(node.role),
                name: if unnamed {
                    name_from_descendants(tree, index)
                } else {
                    node.name.clone()
                },
                name_from_contents: unnamed,
                value: node.value.clone(),
                bounds,
                states: node.states,
                actions: node.actions.clone(),
                node: node.node.clone(),
            }
        })
        .collect()
}

/// A name for an element that has none of its own, from the text of what it contains: a GTK
/// list row or a web link often carries its text in child labels. Descendants in document
/// order (which is reading order for rows and links), a few levels deep, at most three pieces.
fn name_from_descendants(tree: &AccessibilityTree, index: usize) -> String {
    const MAX_DEPTH: u32 = 3;
    const MAX_PIECES: usize = 3;
    let mut pieces: Vec<&str> = Vec::new();
    let mut stack: Vec<(usize, u32)> = tree.nodes[index]
        .children
        .iter()
        .rev()
        .map(|&child| (child, 1))
        .collect();
    while let Some((child, depth)) = stack.pop() {
        let Some(node) = tree.nodes.get(child) else {
            continue;
        };
        let text = node.name.trim();
        if !text.is_empty() {
            if !pieces.contains(&text) {
                pieces.push(text);
            }
            if pieces.len() == MAX_PIECES {
                break;
            }
        } else if depth < MAX_DEPTH {
            stack.extend(node.children.iter().rev().map(|&c| (c, depth + 1)));
        }
    }
    pieces.join(" ")
}

fn quoted(text: &str, limit: usize) -> String {
    let one_line: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let cut: String = one_line.chars().take(limit).collect();
    let ellipsis = if one_line.chars().count() > limit {
        "…"
    } else {
        ""
    };
    format!("{:?}", format!("{cut}{ellipsis}"))
}

impl Element {
    /// One line of the element list: `B3 button "Save"`, with `bounds` its screen box
    /// (`B3 button "Save" (812,440 96x32)`), then the value and notable states.
    pub fn line(&self, bounds: bool) -> String {
        let mut line = format!("{} {} {}", self.id, self.kind, quoted(&self.name, 80));
        if bounds {
            line.push_str(&format!(" ({})", self.bounds));
        }
        if let Some(value) = &self.value {
            line.push_str(&format!(" value={}", quoted(value, 80)));
        }
        let s = &self.states;
        let is_toggle = matches!(self.role, Role::CheckBox | Role::Switch | Role::RadioButton);
        for (flag, word) in [
            (is_toggle && s.checked, "checked"),
            (is_toggle && !s.checked, "unchecked"),
            (s.selected, "selected"),
            (s.focused, "focused"),
            (!s.enabled, "disabled"),
        ] {
            if flag {
                line.push(' ');
                line.push_str(word);
            }
        }
        line
    }
}

/// The element list, one line each, with or without each element's screen box.
pub fn element_list(elements: &[Element], bounds: bool) -> String {
    elements
        .iter()
        .map(|element| element.line(bounds))
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::accessibility::AccessibleNode;

    fn node(role: Role, name: &str, bounds: Rect) -> AccessibleNode {
        AccessibleNode {
            node: NodeRef(format!(":1.1|/{name}")),
            role,
            platform_role: String::new(),
            name: name.into(),
            description: String::new(),
            value: None,
            states: States {
                enabled: true,
                visible: true,
                showing: true,
                ..States::default()
            },
            bounds: Some(bounds),
            actions: vec!["click".into()],
            children: vec![],
            depth: 1,
        }
    }

    fn tree(nodes: Vec<AccessibleNode>) -> AccessibilityTree {
        AccessibilityTree {
            nodes,
            complete: true,
            ..AccessibilityTree::default()
        }
    }

    #[test]
    fn ids_follow_reading_order_in_bands_with_per_prefix_counters() {
        let screen = Rect::new(0, 0, 1000, 1000);
        let t = tree(vec![
            node(Role::Window, "win", Rect::new(0, 0, 1000, 1000)),
            // Same band (tops 104 and 100): left to right, whatever the tree order.
            node(Role::Button, "right", Rect::new(500, 104, 80, 30)),
            node(Role::Button, "left", Rect::new(10, 100, 80, 30)),
            node(Role::TextInput, "field", Rect::new(200, 101, 100, 30)),
            // Next band.
            node(Role::Button, "below", Rect::new(0, 140, 80, 30)),
            node(Role::CheckBox, "check", Rect::new(0, 200, 20, 20)),
            node(Role::Label, "plain label", Rect::new(0, 300, 50, 20)),
        ]);
        let mut t = t;
        t.nodes[6].actions.clear();
        let elements = assign_ids(&t, screen);
        let ids: Vec<(&str, &str)> = elements
            .iter()
            .map(|e| (e.id.as_str(), e.name.as_str()))
            .collect();
        assert_eq!(
            ids,
            [
                ("B1", "left"),
                ("T1", "field"),
                ("B2", "right"),
                ("B3", "below"),
                ("C1", "check")
            ]
        );
        // Identical trees, identical IDs.
        assert_eq!(assign_ids(&t, screen), elements);
        assert_eq!(elements[0].line(false), r#"B1 button "left""#);
        assert_eq!(elements[0].line(true), r#"B1 button "left" (10,100 80x30)"#);
        assert_eq!(elements[4].line(false), r#"C1 checkbox "check" unchecked"#);
        assert_eq!(
            elements[4].line(true),
            r#"C1 checkbox "check" (0,200 20x20) unchecked"#
        );
    }

    #[test]
    fn unnamed_elements_take_the_text_of_what_they_contain() {
        let mut row = node(Role::ListItem, "", Rect::new(0, 0, 200, 20));
        row.children = vec![1, 3];
        let mut cell = node(Role::GenericContainer, "", Rect::new(0, 0, 200, 20));
        cell.children = vec![2];
        cell.actions.clear();
        let mut label = node(Role::Label, "Apple", Rect::new(0, 0, 50, 20));
        label.actions.clear();
        let mut price = node(Role::Label, "1.20", Rect::new(60, 0, 50, 20));
        price.actions.clear();
        let named = node(Role::Button, "Buy", Rect::new(0, 40, 50, 20));
        let elements = assign_ids(
            &tree(vec![row, cell, label, price, named]),
            Rect::new(0, 0, 300, 300),
        );
        let names: Vec<&str> = elements.iter().map(|e| e.name.as_str()).collect();
        // In document order, through the unnamed cell.
        assert_eq!(names, ["Apple 1.20", "Buy"]);
    }

    #[test]
    fn hidden_offscreen_and_boundless_elements_get_no_id() {
        let mut hidden = node(Role::Button, "hidden", Rect::new(0, 0, 10, 10));
        hidden.states.showing = false;
        let mut boundless = node(Role::Button, "boundless", Rect::new(0, 0, 10, 10));
        boundless.bounds = None;
        let outside = node(Role::Button, "outside", Rect::new(2000, 0, 10, 10));
        let half_out = node(Role::Button, "mostly out", Rect::new(95, 0, 20, 10));
        let inside = node(Role::Button, "inside", Rect::new(50, 50, 10, 10));
        let elements = assign_ids(
            &tree(vec![hidden, boundless, outside, half_out, inside]),
            Rect::new(0, 0, 100, 100),
        );
        assert_eq!(elements.len(), 1);
        assert_eq!(elements[0].name, "inside");
    }
}

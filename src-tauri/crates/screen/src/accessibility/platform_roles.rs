//! Role tables of the macOS (AX role strings) and Windows (UI Automation control type ids)
//! backends, normalised to [`accesskit::Role`]. Plain data, compiled on every target so the
//! tables are unit tested on Linux too.

use accesskit::Role;

/// A UI Automation control type id (`UIA_ButtonControlTypeId` = 50000, ...) as a role.
#[cfg_attr(not(target_os = "windows"), allow(dead_code))]
pub(crate) fn uia_role(control_type: i32) -> Role {
    match control_type {
        50000 => Role::Button,
        50001 => Role::Grid, // Calendar
        50002 => Role::CheckBox,
        50003 => Role::ComboBox,
        50004 => Role::TextInput, // Edit
        50005 => Role::Link,      // Hyperlink
        50006 => Role::Image,
        50007 => Role::ListItem,
        50008 => Role::List,
        50009 => Role::Menu,
        50010 => Role::MenuBar,
        50011 => Role::MenuItem,
        50012 => Role::ProgressIndicator,
        50013 => Role::RadioButton,
        50014 => Role::ScrollBar,
        50015 => Role::Slider,
        50016 => Role::SpinButton, // Spinner
        50017 => Role::Status,     // StatusBar
        50018 => Role::TabList,    // Tab
        50019 => Role::Tab,        // TabItem
        50020 => Role::Label,      // Text
        50021 => Role::Toolbar,
        50022 => Role::Tooltip,
        50023 => Role::Tree,
        50024 => Role::TreeItem,
        50025 => Role::GenericContainer, // Custom
        50026 => Role::Group,
        50027 => Role::GenericContainer, // Thumb
        50028 => Role::Grid,             // DataGrid
        50029 => Role::Row,              // DataItem
        50030 => Role::Document,
        50031 => Role::Button, // SplitButton
        50032 => Role::Window,
        50033 => Role::Pane,
        50034 => Role::GenericContainer, // Header
        50035 => Role::ColumnHeader,     // HeaderItem
        50036 => Role::Table,
        50037 => Role::TitleBar,
        50038 => Role::Splitter,         // Separator
        50039 => Role::GenericContainer, // SemanticZoom
        50040 => Role::Toolbar,          // AppBar
        _ => Role::Unknown,
    }
}

/// An AX role (`AXButton`) and subrole (`AXSecureTextField`, `AXSwitch`) as a role.
#[cfg_attr(not(target_os = "macos"), allow(dead_code))]
pub(crate) fn ax_role(role: &str, subrole: &str) -> Role {
    match (role, subrole) {
        ("AXTextField", "AXSecureTextField") => Role::PasswordInput,
        ("AXTextField", "AXSearchField") => Role::SearchInput,
        ("AXCheckBox", "AXSwitch") => Role::Switch,
        ("AXCheckBox", "AXToggle") => Role::Switch,
        ("AXWindow", "AXDialog" | "AXSystemDialog") => Role::Dialog,
        ("AXRow", "AXOutlineRow") => Role::TreeItem,
        _ => match role {
            "AXButton" | "AXPopUpButton" | "AXMenuButton" | "AXDisclosureTriangle" => {
                if role == "AXPopUpButton" {
                    Role::ComboBox
                } else {
                    Role::Button
                }
            }
            "AXTextField" => Role::TextInput,
            "AXTextArea" => Role::MultilineTextInput,
            "AXComboBox" => Role::EditableComboBox,
            "AXCheckBox" => Role::CheckBox,
            "AXRadioButton" => Role::RadioButton,
            "AXRadioGroup" => Role::RadioGroup,
            "AXLink" => Role::Link,
            "AXStaticText" => Role::Label,
            "AXHeading" => Role::Heading,
            "AXImage" => Role::Image,
            "AXSlider" => Role::Slider,
            "AXIncrementor" => Role::SpinButton,
            "AXScrollBar" => Role::ScrollBar,
            "AXMenuBar" => Role::MenuBar,
            "AXMenu" => Role::Menu,
            "AXMenuBarItem" | "AXMenuItem" => Role::MenuItem,
            "AXTabGroup" => Role::TabList,
            "AXTab" => Role::Tab,
            "AXList" => Role::List,
            "AXTable" | "AXOutline" => Role::Table,
            "AXBrowser" => Role::Tree,
            "AXRow" => Role::Row,
            "AXColumn" => Role::GenericContainer,
            "AXCell" => Role::Cell,
            "AXToolbar" => Role::Toolbar,
            "AXGroup" | "AXSplitGroup" | "AXLayoutArea" => Role::Group,
            "AXScrollArea" => Role::ScrollView,
            "AXSplitter" => Role::Splitter,
            "AXProgressIndicator" | "AXBusyIndicator" | "AXLevelIndicator" => {
                Role::ProgressIndicator
            }
            "AXWindow" | "AXSheet" | "AXDrawer" => Role::Window,
            "AXApplication" => Role::Application,
            "AXWebArea" => Role::Document,
            "AXHelpTag" => Role::Tooltip,
            "AXColorWell" => Role::ColorWell,
            "AXDateField" => Role::DateInput,
            _ => Role::Unknown,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::elements::prefix;

    #[test]
    fn uia_control_types_map_to_the_id_prefixes() {
        assert_eq!(prefix(uia_role(50000)), Some('B'));
        assert_eq!(prefix(uia_role(50004)), Some('T'));
        assert_eq!(prefix(uia_role(50002)), Some('C'));
        assert_eq!(prefix(uia_role(50003)), Some('P'));
        assert_eq!(prefix(uia_role(50007)), Some('I'));
        assert_eq!(prefix(uia_role(50019)), Some('A'));
        assert_eq!(prefix(uia_role(50005)), Some('L'));
        assert_eq!(uia_role(50032), Role::Window);
        assert_eq!(uia_role(12345), Role::Unknown);
    }

    #[test]
    fn ax_roles_and_subroles_map_to_the_id_prefixes() {
        assert_eq!(prefix(ax_role("AXButton", "")), Some('B'));
        assert_eq!(prefix(ax_role("AXTextField", "")), Some('T'));
        assert_eq!(
            ax_role("AXTextField", "AXSecureTextField"),
            Role::PasswordInput
        );
        assert_eq!(ax_role("AXCheckBox", "AXSwitch"), Role::Switch);
        assert_eq!(prefix(ax_role("AXPopUpButton", "")), Some('P'));
        assert_eq!(prefix(ax_role("AXMenuItem", "")), Some('M'));
        assert_eq!(ax_role("AXWindow", "AXDialog"), Role::Dialog);
        assert_eq!(ax_role("AXSomethingNew", ""), Role::Unknown);
    }
}

//! AT-SPI roles normalised to accesskit's. AT-SPI has no text-input subtypes beyond password
//! and no toggle-button role in accesskit: toggle buttons become `Switch` (a two-state control),
//! which is what the model needs to know.

use accesskit::Role as Ak;
use atspi::Role as At;

pub fn normalise(role: At) -> Ak {
    match role {
        At::Button | At::PushButtonMenu => Ak::Button,
        At::ToggleButton => Ak::Switch,
        At::CheckBox => Ak::CheckBox,
        At::RadioButton => Ak::RadioButton,
        At::Entry | At::Text | At::Editbar | At::Terminal => Ak::TextInput,
        At::PasswordText => Ak::PasswordInput,
        At::SpinButton => Ak::SpinButton,
        At::Slider | At::Dial => Ak::Slider,
        At::ComboBox => Ak::ComboBox,
        At::Link => Ak::Link,
        At::MenuItem | At::TearoffMenuItem => Ak::MenuItem,
        At::CheckMenuItem => Ak::MenuItemCheckBox,
        At::RadioMenuItem => Ak::MenuItemRadio,
        At::Menu | At::PopupMenu => Ak::Menu,
        At::MenuBar => Ak::MenuBar,
        At::PageTab => Ak::Tab,
        At::PageTabList => Ak::TabList,
        At::ScrollBar => Ak::ScrollBar,
        At::ScrollPane | At::Viewport => Ak::ScrollView,
        At::List => Ak::List,
        At::ListBox => Ak::ListBox,
        At::ListItem => Ak::ListItem,
        At::Tree => Ak::Tree,
        At::TreeItem => Ak::TreeItem,
        At::Table => Ak::Table,
        At::TreeTable => Ak::TreeGrid,
        At::TableCell => Ak::Cell,
        At::TableRow => Ak::Row,
        At::ColumnHeader | At::TableColumnHeader => Ak::ColumnHeader,
        At::RowHeader | At::TableRowHeader => Ak::RowHeader,
        At::ToolBar => Ak::Toolbar,
        At::Image | At::Icon | At::DesktopIcon => Ak::Image,
        At::Label | At::Static | At::Caption | At::AcceleratorLabel => Ak::Label,
        At::Paragraph => Ak::Paragraph,
        At::Heading => Ak::Heading,
        At::Frame | At::Window | At::InternalFrame | At::DesktopFrame => Ak::Window,
        At::Dialog | At::FileChooser | At::ColorChooser | At::FontChooser | At::OptionPane => {
            Ak::Dialog
        }
        At::Alert | At::Notification | At::InfoBar => Ak::Alert,
        At::Panel | At::Filler | At::RootPane | At::LayeredPane | At::GlassPane | At::Section => {
            Ak::GenericContainer
        }
        At::Grouping => Ak::Group,
        At::Form => Ak::Form,
        At::SplitPane => Ak::Pane,
        At::Separator => Ak::Splitter,
        At::ProgressBar | At::LevelBar => Ak::ProgressIndicator,
        At::StatusBar => Ak::Status,
        At::ToolTip => Ak::Tooltip,
        At::DocumentFrame | At::DocumentText | At::DocumentEmail => Ak::Document,
        At::DocumentWeb => Ak::RootWebArea,
        At::Canvas | At::DrawingArea => Ak::Canvas,
        At::Application => Ak::Application,
        At::Header => Ak::Header,
        At::Footer => Ak::Footer,
        At::Article => Ak::Article,
        At::Landmark => Ak::Region,
        At::Log => Ak::Log,
        At::Marquee => Ak::Marquee,
        At::Math => Ak::Math,
        At::Timer => Ak::Timer,
        At::Audio => Ak::Audio,
        At::Video => Ak::Video,
        At::Embedded => Ak::EmbeddedObject,
        At::Comment => Ak::Comment,
        At::BlockQuote => Ak::Blockquote,
        At::Definition | At::DescriptionValue => Ak::Definition,
        At::DescriptionList => Ak::DescriptionList,
        At::DescriptionTerm => Ak::Term,
        At::TitleBar => Ak::TitleBar,
        At::Autocomplete => Ak::ComboBox,
        At::DateEditor => Ak::DateInput,
        At::Calendar => Ak::Grid,
        _ => Ak::Unknown,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn common_gtk_roles_map_to_their_accesskit_roles() {
        assert_eq!(normalise(At::Button), Ak::Button);
        assert_eq!(normalise(At::Entry), Ak::TextInput);
        assert_eq!(normalise(At::Text), Ak::TextInput);
        assert_eq!(normalise(At::CheckBox), Ak::CheckBox);
        assert_eq!(normalise(At::ComboBox), Ak::ComboBox);
        assert_eq!(normalise(At::ListItem), Ak::ListItem);
        assert_eq!(normalise(At::Frame), Ak::Window);
        assert_eq!(normalise(At::Invalid), Ak::Unknown);
    }
}

//! AT-SPI over D-Bus, in-process. The accessibility bus is found through the session bus
//! (`org.a11y.Bus.GetAddress`) whose address is given explicitly or read from the environment;
//! one connection is kept for the backend's life. A window's tree is walked breadth-first, one
//! level at a time, with the per-node requests of a level in flight together (zbus pipelines
//! them on the one connection), so a level costs about one round trip to the application rather
//! than one per request. Subtrees that are not showing (closed menus, hidden pages) are not
//! entered. The walk stops at the depth, node and time limits and says so in the tree's notes.
//!
//! Where the application offers the Cache interface (`org.a11y.atspi.Cache.GetItems`, e.g.
//! GTK 3 through at-spi2-atk), one call at the start of the walk returns role, name,
//! description, states, interfaces and the child layout of every cached element; those
//! elements then need only the requests the cache lacks (screen extents, actions, text or
//! value, each only when the element has the interface). Elements the cache leaves out
//! (children of containers that manage their descendants, lists, flow boxes, other processes'
//! plugs) and elements whose cached child count does not match are fetched in full as before,
//! so the result is the same tree either way.

mod roles;

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::time::Instant;

use atspi::{Interface, InterfaceSet, State, StateSet};
use futures::future::BoxFuture;
use futures::stream::{self, StreamExt};
use tokio::sync::OnceCell;
use zbus::Connection;
use zbus::zvariant::{OwnedObjectPath, OwnedValue};

use super::{
    AccessibilityBackend, AccessibilityTree, AccessibleNode, NodeRef, States, TreeLimits, pre_order,
};
use crate::capture::WindowInfo;
use crate::error::{Error, Result};
use crate::geometry::Rect;

const ROOT_PATH: &str = "/org/a11y/atspi/accessible/root";
const ACCESSIBLE: &str = "org.a11y.atspi.Accessible";
const COMPONENT: &str = "org.a11y.atspi.Component";
const ACTION: &str = "org.a11y.atspi.Action";
const TEXT: &str = "org.a11y.atspi.Text";
const VALUE: &str = "org.a11y.atspi.Value";
const PROPERTIES: &str = "org.freedesktop.DBus.Properties";
const CACHE: &str = "org.a11y.atspi.Cache";
const CACHE_PATH: &str = "/org/a11y/atspi/cache";
/// Screen coordinates for `GetExtents`.
const COORD_SCREEN: u32 = 0;
/// AT-SPI's null object reference.
const NULL_PATH: &str = "/org/a11y/atspi/null";
/// At most this many children are asked for one by one (an embedding has one).
const EMBEDDED_CHILDREN_MAX: i32 = 16;
/// At most this many action names are read from one element.
const ACTIONS_MAX: i32 = 16;
/// Nodes fetched at once. Each has about seven requests in flight; the bus daemon caps pending
/// replies per connection, so this stays well under common limits.
const CONCURRENT_NODES: usize = 24;

fn accessibility_error(error: impl std::fmt::Display) -> Error {
    Error::Accessibility(error.to_string())
}

/// The Linux accessibility backend. Its D-Bus connection lives on a runtime of its own (one
/// worker thread), so callers on any runtime, or several, can share one backend; dropping a
/// call's future aborts its work.
pub struct AtspiBackend {
    shared: Arc<Shared>,
    runtime: Option<tokio::runtime::Runtime>,
}

struct Shared {
    session_bus_address: Option<String>,
    bus: OnceCell<Connection>,
    /// Direct connections to applications by their bus name (`None`: it offers none).
    direct: tokio::sync::Mutex<HashMap<String, Option<Connection>>>,
}

impl std::fmt::Debug for AtspiBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AtspiBackend")
            .field("session_bus_address", &self.shared.session_bus_address)
            .finish_non_exhaustive()
    }
}

impl Drop for AtspiBackend {
    fn drop(&mut self) {
        // Safe in async contexts too, unlike dropping a runtime outright.
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

/// Aborts the spawned task when the caller stops waiting.
struct AbortOnDrop<T>(tokio::task::JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// What one node's requests returned.
struct Fetched {
    role: atspi::Role,
    states: StateSet,
    name: String,
    description: String,
    children: Vec<(String, OwnedObjectPath)>,
    /// The children are another process's tree embedded here (found by index): the embedding
    /// widget itself may not claim to be showing (WebKitGTK's web view does not), its content
    /// says for itself.
    embeds: bool,
    bounds: Option<Rect>,
    actions: Vec<String>,
    value: Option<String>,
}

/// One element as the application's cache describes it: `((so)(so)(so)iiassusau)`, the
/// at-spi2-core 2.46+ layout (object, application, parent, index in parent, child count,
/// interfaces, name, role, description, states).
type CacheEntry = (
    (String, OwnedObjectPath),
    (String, OwnedObjectPath),
    (String, OwnedObjectPath),
    i32,
    i32,
    InterfaceSet,
    String,
    u32,
    String,
    StateSet,
);

/// `(bus name, object path)` as the cache's lookups use it.
type Key = (String, String);
/// A reference as D-Bus carries it.
type ObjectRef = (String, OwnedObjectPath);

/// What the cache says about one element, with its children when the cache holds all of them.
struct Cached {
    role: u32,
    states: StateSet,
    interfaces: InterfaceSet,
    name: String,
    description: String,
    children: Option<Vec<ObjectRef>>,
}

/// An application's cache, keyed by `(bus name, object path)`.
#[derive(Default)]
struct Cache {
    items: HashMap<Key, Cached>,
}

impl Cache {
    /// Builds the lookup from `GetItems`'s answer. A node's children count as known only when
    /// the cache holds exactly as many as the node reports (a container that manages its
    /// descendants reports -1 and its children are not cached).
    fn from_entries(entries: Vec<CacheEntry>) -> Cache {
        let mut by_parent: HashMap<Key, Vec<(i32, ObjectRef)>> = HashMap::new();
        let mut items = HashMap::with_capacity(entries.len());
        let mut counts = HashMap::with_capacity(entries.len());
        for (
            object,
            _application,
            parent,
            index,
            count,
            interfaces,
            name,
            role,
            description,
            states,
        ) in entries
        {
            let key = (object.0.clone(), object.1.to_string());
            by_parent
                .entry((parent.0, parent.1.to_string()))
                .or_default()
                .push((index, object));
            counts.insert(key.clone(), count);
            items.insert(
                key,
                Cached {
                    role,
                    states,
                    interfaces,
                    name,
                    description,
                    children: None,
                },
            );
        }
        for (parent, mut children) in by_parent {
            let Some(item) = items.get_mut(&parent) else {
                continue;
            };
            let expected = counts.get(&parent).copied().unwrap_or(-1);
            children.sort_by_key(|(index, _)| *index);
            let in_order = children
                .iter()
                .enumerate()
                .all(|(position, (index, _))| *index == position as i32);
            if expected >= 0 && children.len() == expected as usize && in_order {
                item.children = Some(children.into_iter().map(|(_, child)| child).collect());
            }
        }
        for (key, count) in counts {
            if count == 0
                && let Some(item) = items.get_mut(&key)
            {
                item.children = Some(Vec::new());
            }
        }
        Cache { items }
    }

    fn get(&self, destination: &str, path: &str) -> Option<&Cached> {
        self.items.get(&(destination.to_string(), path.to_string()))
    }
}

fn split_ref(node: &NodeRef) -> Result<(&str, &str)> {
    node.0.split_once('|').ok_or_else(|| {
        Error::InvalidInput(format!("{} is not an AT-SPI element reference", node.0))
    })
}

fn node_ref(bus: &str, path: &str) -> NodeRef {
    NodeRef(format!("{bus}|{path}"))
}

fn states_of(set: StateSet) -> States {
    States {
        focused: set.contains(State::Focused),
        focusable: set.contains(State::Focusable),
        enabled: set.contains(State::Enabled) || set.contains(State::Sensitive),
        checked: set.contains(State::Checked) || set.contains(State::Pressed),
        selected: set.contains(State::Selected),
        selectable: set.contains(State::Selectable),
        editable: set.contains(State::Editable),
        visible: set.contains(State::Visible),
        showing: set.contains(State::Showing),
        expanded: set.contains(State::Expanded),
    }
}

fn is_gone(error: &zbus::Error) -> bool {
    let text = error.to_string();
    text.contains("UnknownObject")
        || text.contains("UnknownMethod")
        || text.contains("ServiceUnknown")
        || text.contains("NameHasNoOwner")
}

impl AtspiBackend {
    /// A backend that finds the accessibility bus through this session bus (`None`: the
    /// environment's). Nothing connects until the first call.
    pub fn new(session_bus_address: Option<String>) -> AtspiBackend {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("osprey-atspi")
            .enable_all()
            .build()
            .ok();
        AtspiBackend {
            shared: Arc::new(Shared {
                session_bus_address,
                bus: OnceCell::new(),
                direct: tokio::sync::Mutex::new(HashMap::new()),
            }),
            runtime,
        }
    }

    /// Runs `work` on the backend's runtime with the bus connection.
    async fn run<T, F, Fut>(&self, work: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(Connection) -> Fut + Send + 'static,
        Fut: Future<Output = Result<T>> + Send + 'static,
    {
        let runtime = self.runtime.as_ref().ok_or_else(|| {
            Error::Accessibility("could not start the accessibility worker thread".into())
        })?;
        let shared = self.shared.clone();
        let mut task = AbortOnDrop(runtime.spawn(async move {
            let bus = shared.bus().await?;
            work(bus).await
        }));
        match (&mut task.0).await {
            Ok(result) => result,
            Err(error) => Err(Error::Accessibility(format!(
                "the accessibility worker failed: {error}"
            ))),
        }
    }
}

impl Shared {
    async fn bus(&self) -> Result<Connection> {
        self.bus
            .get_or_try_init(|| async {
                let connect = async {
                    let session = match &self.session_bus_address {
                        Some(address) => {
                            zbus::connection::Builder::address(address.as_str())?
                                .build()
                                .await?
                        }
                        None => Connection::session().await?,
                    };
                    let reply = session
                        .call_method(
                            Some("org.a11y.Bus"),
                            "/org/a11y/bus",
                            Some("org.a11y.Bus"),
                            "GetAddress",
                            &(),
                        )
                        .await?;
                    let address: String = reply.body().deserialize()?;
                    zbus::connection::Builder::address(address.as_str())?
                        .build()
                        .await
                };
                match tokio::time::timeout(std::time::Duration::from_secs(10), connect).await {
                    Ok(Ok(bus)) => {
                        register_as_client(&bus).await;
                        Ok(bus)
                    }
                    Ok(Err(error)) => Err(Error::Accessibility(format!(
                        "cannot reach the AT-SPI accessibility bus through the session bus {}: {error}",
                        self.session_bus_address
                            .as_deref()
                            .unwrap_or("$DBUS_SESSION_BUS_ADDRESS")
                    ))),
                    Err(_) => Err(Error::Accessibility(
                        "the accessibility bus did not answer within 10 s".into(),
                    )),
                }
            })
            .await
            .cloned()
    }
}

/// Tells the registry that an assistive technology is listening (as a screen reader does), for
/// as long as this connection lives. at-spi2-atk (GTK 3) only builds its Cache of the tree and
/// keeps it current once some client has registered for events; without it `GetItems` does not
/// exist and every walk goes element by element. The one event asked for (children changed) is
/// rare and delivered only to connections that match on it, which this one does not.
/// Best effort: a registry that refuses leaves the walk as it was.
async fn register_as_client(bus: &Connection) {
    const REGISTRY: &str = "org.a11y.atspi.Registry";
    const REGISTRY_PATH: &str = "/org/a11y/atspi/registry";
    const EVENT: &str = "object:children-changed";
    // at-spi2-core up to 2.48 takes RegisterEvent(s); later versions RegisterEvent(s, as, s).
    let Err(first) = bus
        .call_method(
            Some(REGISTRY),
            REGISTRY_PATH,
            Some(REGISTRY),
            "RegisterEvent",
            &(EVENT,),
        )
        .await
    else {
        return;
    };
    if let Err(second) = bus
        .call_method(
            Some(REGISTRY),
            REGISTRY_PATH,
            Some(REGISTRY),
            "RegisterEvent",
            &(EVENT, Vec::<String>::new(), ""),
        )
        .await
    {
        tracing::debug!(%first, %second, "the AT-SPI registry refused the event registration");
    }
}

/// Where the walk's requests go: the accessibility bus, and for the walked application its own
/// socket when it offers one (`GetApplicationBusAddress`; at-spi2-atk does). Direct requests
/// skip the bus daemon's two hops per request and its routing work, which on a big tree is most
/// of the time spent.
#[derive(Clone)]
struct Route {
    bus: Connection,
    direct: Option<(String, Connection)>,
}

impl Route {
    fn bus(bus: &Connection) -> Route {
        Route {
            bus: bus.clone(),
            direct: None,
        }
    }

    async fn call_method(
        &self,
        destination: &str,
        path: &str,
        interface: &str,
        method: &str,
        body: &(impl serde::Serialize + zbus::zvariant::DynamicType),
    ) -> zbus::Result<zbus::Message> {
        match &self.direct {
            Some((name, direct)) if name == destination => {
                direct
                    .call_method(None::<&str>, path, Some(interface), method, body)
                    .await
            }
            _ => {
                self.bus
                    .call_method(Some(destination), path, Some(interface), method, body)
                    .await
            }
        }
    }
}

impl Shared {
    /// The application's own connection, made once and kept; `None` when it offers none. An
    /// application that does not answer by the deadline is asked again next time.
    async fn direct(
        &self,
        bus: &Connection,
        application: &str,
        deadline: Instant,
    ) -> Option<Connection> {
        if let Some(known) = self.direct.lock().await.get(application) {
            return known.clone();
        }
        let connect = async {
            let reply = bus
                .call_method(
                    Some(application),
                    ROOT_PATH,
                    Some("org.a11y.atspi.Application"),
                    "GetApplicationBusAddress",
                    &(),
                )
                .await
                .ok()?;
            let address: String = reply.body().deserialize().ok()?;
            if address.is_empty() {
                return None;
            }
            zbus::connection::Builder::address(address.as_str())
                .ok()?
                .p2p()
                .build()
                .await
                .ok()
        };
        let direct = tokio::time::timeout_at(deadline.into(), connect)
            .await
            .ok()?;
        self.direct
            .lock()
            .await
            .insert(application.to_string(), direct.clone());
        direct
    }
}

impl AtspiBackend {
    async fn call<R>(
        bus: &Route,
        destination: &str,
        path: &str,
        interface: &str,
        method: &str,
        body: &(impl serde::Serialize + zbus::zvariant::DynamicType),
    ) -> zbus::Result<R>
    where
        R: for<'d> serde::Deserialize<'d> + zbus::zvariant::Type,
    {
        let reply = bus
            .call_method(destination, path, interface, method, body)
            .await?;
        reply.body().deserialize::<R>()
    }

    async fn children(
        bus: &Route,
        destination: &str,
        path: &str,
    ) -> zbus::Result<Vec<(String, OwnedObjectPath)>> {
        Self::call(bus, destination, path, ACCESSIBLE, "GetChildren", &()).await
    }

    /// The children of a container whose `GetChildren` came back empty although it has some:
    /// a GTK widget that embeds another process's tree (WebKitGTK's web view, whose page lives in
    /// the web process under a well-known bus name) answers only `ChildCount` and
    /// `GetChildAtIndex`. Asked only of container roles, so leaves cost no extra request.
    async fn embedded_children(
        bus: &Route,
        destination: &str,
        path: &str,
        role: atspi::Role,
    ) -> Vec<(String, OwnedObjectPath)> {
        use atspi::Role;
        if !matches!(
            role,
            Role::Filler | Role::Panel | Role::ScrollPane | Role::Embedded | Role::Unknown
        ) {
            return Vec::new();
        }
        let count: i32 = match Self::call::<OwnedValue>(
            bus,
            destination,
            path,
            PROPERTIES,
            "Get",
            &(ACCESSIBLE, "ChildCount"),
        )
        .await
        .map(i32::try_from)
        {
            Ok(Ok(count)) => count.clamp(0, EMBEDDED_CHILDREN_MAX),
            _ => return Vec::new(),
        };
        let children = futures::future::join_all((0..count).map(|index| async move {
            Self::call::<(String, OwnedObjectPath)>(
                bus,
                destination,
                path,
                ACCESSIBLE,
                "GetChildAtIndex",
                &(index,),
            )
            .await
        }))
        .await;
        children
            .into_iter()
            .filter_map(|child| child.ok())
            // A null reference ("" or the null path) is no child.
            .filter(|(name, child)| !name.is_empty() && child.as_str() != NULL_PATH)
            .collect()
    }

    /// A cached element's screen box and action names, each asked only of an element that has
    /// the interface (see [`AtspiBackend::fetch`] for why).
    async fn extents_and_actions(
        bus: &Route,
        destination: &str,
        path: &str,
        interfaces: InterfaceSet,
    ) -> (zbus::Result<Option<Rect>>, Vec<String>) {
        let extents = async {
            if interfaces.contains(Interface::Component) {
                Self::extents(bus, destination, path).await
            } else {
                Ok(None)
            }
        };
        let actions = async {
            if interfaces.contains(Interface::Action) {
                Self::action_names(bus, destination, path).await
            } else {
                Vec::new()
            }
        };
        futures::join!(extents, actions)
    }

    /// The element's action names (`click`, `press`, `activate`), lower-cased, empty ones left
    /// out. Asked as `NActions` and `GetName` per action, not `GetActions`: WebKitGTK's web
    /// process never answers `GetActions`, and every toolkit answers these.
    async fn action_names(bus: &Route, destination: &str, path: &str) -> Vec<String> {
        let count = Self::call::<OwnedValue>(
            bus,
            destination,
            path,
            PROPERTIES,
            "Get",
            &(ACTION, "NActions"),
        )
        .await
        .ok()
        .and_then(|v| i32::try_from(v).ok())
        .unwrap_or(0)
        .clamp(0, ACTIONS_MAX);
        let names = futures::future::join_all((0..count).map(|index| async move {
            Self::call::<String>(bus, destination, path, ACTION, "GetName", &(index,)).await
        }))
        .await;
        names
            .into_iter()
            .filter_map(|name| name.ok())
            .map(|name| name.trim().to_lowercase())
            .filter(|name| !name.is_empty())
            .collect()
    }

    async fn extents(bus: &Route, destination: &str, path: &str) -> zbus::Result<Option<Rect>> {
        let (x, y, width, height): (i32, i32, i32, i32) = Self::call(
            bus,
            destination,
            path,
            COMPONENT,
            "GetExtents",
            &(COORD_SCREEN,),
        )
        .await?;
        Ok((width > 0 && height > 0).then(|| Rect::new(x, y, width as u32, height as u32)))
    }

    async fn name(bus: &Route, destination: &str, path: &str) -> zbus::Result<String> {
        let value: OwnedValue = Self::call(
            bus,
            destination,
            path,
            PROPERTIES,
            "Get",
            &(ACCESSIBLE, "Name"),
        )
        .await?;
        Ok(String::try_from(value).unwrap_or_default())
    }

    /// All of one node's facts, its requests sent together; the actions only once the
    /// interfaces say the element has some. Asking an element for an interface it lacks is not
    /// harmless everywhere: WebKitGTK's web process never answers an Action request on a node
    /// without the interface, so such a request would hold the walk until its deadline.
    async fn fetch(bus: &Route, destination: &str, path: &str) -> zbus::Result<Fetched> {
        let role = Self::call::<u32>(bus, destination, path, ACCESSIBLE, "GetRole", &());
        let states = Self::call::<StateSet>(bus, destination, path, ACCESSIBLE, "GetState", &());
        let interfaces =
            Self::call::<InterfaceSet>(bus, destination, path, ACCESSIBLE, "GetInterfaces", &());
        let properties = Self::call::<HashMap<String, OwnedValue>>(
            bus,
            destination,
            path,
            PROPERTIES,
            "GetAll",
            &(ACCESSIBLE,),
        );
        let children = Self::children(bus, destination, path);
        let extents = Self::extents(bus, destination, path);
        let (role, states, interfaces, properties, children, extents) =
            futures::join!(role, states, interfaces, properties, children, extents);
        let interfaces = interfaces.unwrap_or_else(|_| InterfaceSet::empty());
        let actions = if interfaces.contains(Interface::Action) {
            Self::action_names(bus, destination, path).await
        } else {
            Vec::new()
        };
        let role = role?;
        let states = states?;
        let mut properties = properties.unwrap_or_default();
        let mut text_property = |key: &str| {
            properties
                .remove(key)
                .and_then(|v| String::try_from(v).ok())
                .unwrap_or_default()
        };
        let name = text_property("Name");
        let description = text_property("Description");
        let role = atspi::Role::try_from(role).unwrap_or(atspi::Role::Invalid);
        let value = Self::value(bus, destination, path, role, states, interfaces).await;
        let mut children = children.unwrap_or_default();
        let mut embeds = false;
        if children.is_empty() {
            children = Self::embedded_children(bus, destination, path, role).await;
            embeds = !children.is_empty();
        }
        Ok(Fetched {
            role,
            states,
            name,
            description,
            children,
            embeds,
            bounds: if interfaces.contains(Interface::Component) {
                extents.ok().flatten()
            } else {
                None
            },
            actions,
            value,
        })
    }

    /// The text of editable text fields, the current value of ranges; `None` for the rest.
    async fn value(
        bus: &Route,
        destination: &str,
        path: &str,
        role: atspi::Role,
        states: StateSet,
        interfaces: InterfaceSet,
    ) -> Option<String> {
        if interfaces.contains(Interface::Value) {
            Self::call::<OwnedValue>(
                bus,
                destination,
                path,
                PROPERTIES,
                "Get",
                &(VALUE, "CurrentValue"),
            )
            .await
            .ok()
            .and_then(|v| f64::try_from(v).ok())
            .map(|v| format!("{v}"))
        } else if interfaces.contains(Interface::Text)
            && (states.contains(State::Editable)
                || matches!(role, atspi::Role::Entry | atspi::Role::PasswordText))
        {
            Self::call::<String>(bus, destination, path, TEXT, "GetText", &(0i32, -1i32))
                .await
                .ok()
        } else {
            None
        }
    }

    /// A cached element completed with what the cache lacks, each request only when the
    /// element has the interface, all in flight together.
    async fn fetch_cached(
        bus: &Route,
        destination: &str,
        path: &str,
        cached: &Cached,
    ) -> zbus::Result<Fetched> {
        let interfaces = cached.interfaces;
        let role = atspi::Role::try_from(cached.role).unwrap_or(atspi::Role::Invalid);
        let children = async {
            match &cached.children {
                Some(children) => Ok(children.clone()),
                None => Self::children(bus, destination, path).await,
            }
        };
        let extents_and_actions = Self::extents_and_actions(bus, destination, path, interfaces);
        let value = Self::value(bus, destination, path, role, cached.states, interfaces);
        let (children, (extents, actions), value) =
            futures::join!(children, extents_and_actions, value);
        // An element that vanished since the cache was read fails every request: treat it as
        // gone, as the full fetch does.
        if let Err(error) = &extents
            && is_gone(error)
        {
            return Err(extents.unwrap_err());
        }
        let mut children = children.unwrap_or_default();
        let mut embeds = false;
        if children.is_empty() {
            children = Self::embedded_children(bus, destination, path, role).await;
            embeds = !children.is_empty();
        }
        Ok(Fetched {
            role,
            states: cached.states,
            name: cached.name.clone(),
            description: cached.description.clone(),
            children,
            embeds,
            bounds: extents.ok().flatten(),
            actions,
            value,
        })
    }

    /// The application's cache, or `None` when it offers none (or an older layout); the walk
    /// then fetches every element in full.
    async fn cache(bus: &Route, destination: &str) -> Option<Cache> {
        let entries: Vec<CacheEntry> = match Self::call(
            bus,
            destination,
            CACHE_PATH,
            CACHE,
            "GetItems",
            &(),
        )
        .await
        {
            Ok(entries) => entries,
            Err(error) => {
                tracing::debug!(%destination, %error, "no AT-SPI cache; walking element by element");
                return None;
            }
        };
        (!entries.is_empty()).then(|| Cache::from_entries(entries))
    }

    fn node_from(fetched: &Fetched, node: NodeRef, depth: u32) -> AccessibleNode {
        AccessibleNode {
            node,
            role: roles::normalise(fetched.role),
            platform_role: fetched.role.name().to_string(),
            name: fetched.name.clone(),
            description: fetched.description.clone(),
            value: fetched.value.clone(),
            states: states_of(fetched.states),
            bounds: fetched.bounds,
            actions: fetched.actions.clone(),
            children: Vec::new(),
            depth,
        }
    }

    /// The application and frame that show `window`: the application by process id, the frame
    /// by title, then by bounds.
    async fn find_frame(
        bus: &Route,
        window: &WindowInfo,
        deadline: Instant,
    ) -> Result<Option<(String, String)>> {
        let applications: Vec<(String, OwnedObjectPath)> =
            Self::children(bus, "org.a11y.atspi.Registry", ROOT_PATH)
                .await
                .map_err(|e| accessibility_error(format!("listing applications: {e}")))?;
        let pids = futures::future::join_all(applications.iter().map(|(name, _)| async move {
            Self::call::<u32>(
                bus,
                "org.freedesktop.DBus",
                "/org/freedesktop/DBus",
                "org.freedesktop.DBus",
                "GetConnectionUnixProcessID",
                &(name.as_str(),),
            )
            .await
            .ok()
        }))
        .await;
        let candidates: Vec<&(String, OwnedObjectPath)> = applications
            .iter()
            .zip(&pids)
            .filter(|(_, pid)| window.pid.is_none() || **pid == window.pid)
            .map(|(app, _)| app)
            .collect();
        // Frames of the candidate applications, each application bounded by the deadline so a
        // hung one cannot hold up the others.
        let frames = futures::future::join_all(candidates.iter().map(|(app, root)| async move {
            let listing = async {
                let frames = Self::children(bus, app, root.as_str()).await?;
                let mut out = Vec::new();
                for (frame_bus, frame_path) in frames {
                    let (name, bounds) = futures::join!(
                        Self::name(bus, &frame_bus, frame_path.as_str()),
                        Self::extents(bus, &frame_bus, frame_path.as_str())
                    );
                    out.push((
                        frame_bus,
                        frame_path.to_string(),
                        name.unwrap_or_default(),
                        bounds.ok().flatten(),
                    ));
                }
                zbus::Result::Ok(out)
            };
            tokio::time::timeout_at(deadline.into(), listing)
                .await
                .ok()
                .and_then(|r| r.ok())
                .unwrap_or_default()
        }))
        .await;
        let frames: Vec<_> = frames.into_iter().flatten().collect();
        let by_title = frames.iter().find(|(_, _, name, _)| *name == window.title);
        let by_bounds = || {
            frames
                .iter()
                .find(|(_, _, _, bounds)| *bounds == Some(window.bounds))
        };
        let only = || (frames.len() == 1).then(|| &frames[0]);
        Ok(by_title
            .or_else(by_bounds)
            .or_else(only)
            .map(|(bus, path, _, _)| (bus.clone(), path.clone())))
    }

    async fn walk(
        bus: &Route,
        root: (String, String),
        limits: TreeLimits,
        deadline: Instant,
        tree: &mut AccessibilityTree,
    ) {
        let cache = if limits.use_cache {
            match tokio::time::timeout_at(deadline.into(), Self::cache(bus, &root.0)).await {
                Ok(cache) => cache,
                Err(_) => {
                    tree.complete = false;
                    tree.notes.push(format!(
                        "the application did not answer within {:?}; the tree is partial (0 elements)",
                        limits.timeout
                    ));
                    return;
                }
            }
        } else {
            None
        };
        let cache = &cache;
        // Level order first (with parent links), pre-order at the end.
        let mut nodes: Vec<AccessibleNode> = Vec::new();
        // (parent, bus name, path, depth, whether the parent embeds it from another process)
        let mut frontier: Vec<(Option<usize>, String, String, u32, bool)> =
            vec![(None, root.0, root.1, 0, false)];
        let mut cut_by_depth = false;
        let mut failed = 0usize;
        while !frontier.is_empty() {
            let room = limits.max_nodes.saturating_sub(nodes.len());
            if frontier.len() > room {
                frontier.truncate(room);
                tree.notes.push(format!(
                    "stopped at {} elements (the limit); the tree is partial",
                    limits.max_nodes
                ));
                tree.complete = false;
            }
            if frontier.is_empty() {
                break;
            }
            let mut pending = stream::iter(frontier.into_iter().enumerate().map(
                |(index, (parent, destination, path, depth, embedded))| async move {
                    let cached = cache.as_ref().and_then(|c| c.get(&destination, &path));
                    let fetched = match cached {
                        Some(cached) => Self::fetch_cached(bus, &destination, &path, cached).await,
                        None => Self::fetch(bus, &destination, &path).await,
                    };
                    let fetched = fetched.map(|f| (f, cached.is_some()));
                    (index, parent, destination, path, depth, embedded, fetched)
                },
            ))
            .buffer_unordered(CONCURRENT_NODES);
            let mut results = Vec::new();
            let mut timed_out = false;
            loop {
                tokio::select! {
                    next = pending.next() => match next {
                        Some(result) => results.push(result),
                        None => break,
                    },
                    _ = tokio::time::sleep_until(deadline.into()) => {
                        timed_out = true;
                        break;
                    }
                }
            }
            results.sort_by_key(|r| r.0);
            let mut next = Vec::new();
            for (_, parent, destination, path, depth, embedded, fetched) in results {
                let fetched = match fetched {
                    Ok((fetched, cached)) => {
                        tree.from_cache += usize::from(cached);
                        fetched
                    }
                    Err(_) => {
                        failed += 1;
                        continue;
                    }
                };
                let index = nodes.len();
                nodes.push(Self::node_from(
                    &fetched,
                    node_ref(&destination, &path),
                    depth,
                ));
                if let Some(parent) = parent {
                    nodes[parent].children.push(index);
                }
                // The embedding widget and the embedded tree's top (WebKitGTK's web view, the
                // web process's plug and its scroll view) claim no Showing state; from the first
                // node that does (the page's document), Showing decides as everywhere.
                let claims_showing = fetched.states.contains(State::Showing);
                let showing = depth == 0 || embedded || fetched.embeds || claims_showing;
                let children_embedded = (embedded || fetched.embeds) && !claims_showing;
                if !showing || fetched.children.is_empty() {
                    continue;
                }
                if depth >= limits.max_depth {
                    cut_by_depth = true;
                    continue;
                }
                for (child_bus, child_path) in fetched.children {
                    next.push((
                        Some(index),
                        child_bus,
                        child_path.to_string(),
                        depth + 1,
                        children_embedded,
                    ));
                }
            }
            if timed_out {
                tree.complete = false;
                tree.notes.push(format!(
                    "the application did not answer within {:?}; the tree is partial ({} elements)",
                    limits.timeout,
                    nodes.len()
                ));
                break;
            }
            frontier = next;
        }
        if cut_by_depth {
            tree.complete = false;
            tree.notes.push(format!(
                "elements deeper than {} levels were left out",
                limits.max_depth
            ));
        }
        if failed > 0 {
            tree.notes.push(format!(
                "{failed} elements vanished or failed to answer during the walk"
            ));
        }
        tree.nodes = pre_order(nodes);
    }
}

impl AccessibilityBackend for AtspiBackend {
    fn window_tree<'a>(
        &'a self,
        window: &'a WindowInfo,
        limits: TreeLimits,
    ) -> BoxFuture<'a, Result<AccessibilityTree>> {
        let window = window.clone();
        let shared = self.shared.clone();
        Box::pin(self.run(move |connection| async move {
            let start = Instant::now();
            let deadline = limits.deadline_from(start);
            let bus = Route::bus(&connection);
            let mut tree = AccessibilityTree {
                complete: true,
                ..AccessibilityTree::default()
            };
            let frame = match tokio::time::timeout_at(
                deadline.into(),
                Self::find_frame(&bus, &window, deadline),
            )
            .await
            {
                Ok(frame) => frame?,
                Err(_) => {
                    tree.complete = false;
                    tree.notes.push(format!(
                        "the accessibility bus did not answer within {:?}; no elements",
                        limits.timeout
                    ));
                    tree.elapsed = start.elapsed();
                    return Ok(tree);
                }
            };
            match frame {
                Some(root) => {
                    let direct = if limits.direct {
                        shared.direct(&connection, &root.0, deadline).await
                    } else {
                        None
                    };
                    let route = Route {
                        bus: connection.clone(),
                        direct: direct.map(|direct| (root.0.clone(), direct)),
                    };
                    tree.direct = route.direct.is_some();
                    Self::walk(&route, root.clone(), limits, deadline, &mut tree).await;
                    // A direct connection that no longer works (the application restarted its
                    // server) yields nothing at all: forget it and walk again through the bus.
                    if tree.direct && tree.nodes.is_empty() && Instant::now() < deadline {
                        shared.direct.lock().await.remove(&root.0);
                        tree = AccessibilityTree {
                            complete: true,
                            ..AccessibilityTree::default()
                        };
                        Self::walk(&Route::bus(&connection), root, limits, deadline, &mut tree)
                            .await;
                    }
                }
                None => {
                    tree.complete = false;
                    tree.notes.push(format!(
                        "no accessible window matched {:?} (pid {:?}): the application may not expose accessibility, or did not answer in time",
                        window.title, window.pid
                    ));
                }
            }
            tree.elapsed = start.elapsed();
            Ok(tree)
        }))
    }

    fn refresh<'a>(&'a self, node: &'a NodeRef) -> BoxFuture<'a, Result<Option<AccessibleNode>>> {
        let node = node.clone();
        Box::pin(self.run(move |connection| async move {
            let bus = Route::bus(&connection);
            let (destination, path) = split_ref(&node)?;
            let limit = std::time::Duration::from_secs(3);
            let fetched = tokio::time::timeout(limit, Self::fetch(&bus, destination, path))
                .await
                .map_err(|_| Error::Timeout {
                    what: "reading the element".into(),
                    after: limit,
                })?;
            match fetched {
                Ok(fetched) if fetched.states.contains(State::Defunct) => Ok(None),
                Ok(fetched) => Ok(Some(Self::node_from(&fetched, node.clone(), 0))),
                Err(error) if is_gone(&error) => Ok(None),
                Err(error) => Err(accessibility_error(error)),
            }
        }))
    }

    fn do_action<'a>(&'a self, node: &'a NodeRef, action: &'a str) -> BoxFuture<'a, Result<()>> {
        let node = node.clone();
        let action = action.to_string();
        Box::pin(self.run(move |connection| async move {
            let bus = Route::bus(&connection);
            let (destination, path) = split_ref(&node)?;
            // Match the action's real name (GetName), then its display name.
            let count: i32 = Self::call(
                &bus,
                destination,
                path,
                PROPERTIES,
                "Get",
                &(ACTION, "NActions"),
            )
            .await
            .ok()
            .and_then(|v: OwnedValue| i32::try_from(v).ok())
            .unwrap_or(0);
            let mut names = Vec::new();
            for index in 0..count {
                let name: String =
                    Self::call(&bus, destination, path, ACTION, "GetName", &(index,))
                        .await
                        .map_err(accessibility_error)?;
                names.push(name);
            }
            if names.is_empty() {
                let actions: Vec<(String, String, String)> =
                    Self::call(&bus, destination, path, ACTION, "GetActions", &())
                        .await
                        .map_err(accessibility_error)?;
                names = actions.into_iter().map(|(name, _, _)| name).collect();
            }
            let index = names
                .iter()
                .position(|name| name.eq_ignore_ascii_case(&action))
                .ok_or_else(|| {
                    Error::InvalidInput(format!(
                        "the element has no action `{action}` (it has: {})",
                        names.join(", ")
                    ))
                })?;
            let done: bool = Self::call(
                &bus,
                destination,
                path,
                ACTION,
                "DoAction",
                &(index as i32,),
            )
            .await
            .map_err(accessibility_error)?;
            if done {
                Ok(())
            } else {
                Err(Error::Accessibility(format!(
                    "the application refused the `{action}` action"
                )))
            }
        }))
    }

    fn focus<'a>(&'a self, node: &'a NodeRef) -> BoxFuture<'a, Result<bool>> {
        let node = node.clone();
        Box::pin(self.run(move |connection| async move {
            let bus = Route::bus(&connection);
            let (destination, path) = split_ref(&node)?;
            Self::call::<bool>(&bus, destination, path, COMPONENT, "GrabFocus", &())
                .await
                .map_err(accessibility_error)
        }))
    }
}

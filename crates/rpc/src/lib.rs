//! The app protocol's generated code (tonic + prost from `/proto`) and the Unix-socket helpers both
//! sides use. Schema only: no Osprey policy lives here.
//!
//! Status: not built yet (see the app platform issue).

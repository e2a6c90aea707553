//! The walls every door's runs are held to, below the server's state: tokens, their actors and
//! ceilings (`auth`), and the host's run slots and ceiling check answered as HTTP
//! (`admission`). The router's checks of each request that read the state, `guard` (`Origin`
//! and `Host`) and `body` (JSON bodies only), sit beside it.

pub(crate) mod admission;
pub mod auth;

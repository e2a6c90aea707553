//! The walls every door's runs are held to, below the server's state: tokens, their actors and
//! ceilings (`auth`), and run slots (`limits`). The router's checks of each request that read
//! the state, `guard` (`Origin` and `Host`) and `body` (JSON bodies only), sit beside it.

pub mod auth;
pub mod limits;

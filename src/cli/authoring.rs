//! The commands of a project's author: `kiln init` (and the files it writes, in `init/`),
//! `kiln definitions`, `kiln lsp` and `kiln acp` (what editors run), `kiln test`, `kiln eval`, `kiln watch` and `kiln mock`.

pub(super) mod acp_cmd;
pub(super) mod defs_cmd;
pub(super) mod eval_cmd;
pub(super) mod init_cmd;
pub(super) mod mock_cmd;
pub(super) mod test_cmd;
pub(super) mod watch_cmd;

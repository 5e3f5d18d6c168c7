//! sandbox.json files: the schema the opencode-landstrip plugin enforces, the
//! bundled defaults, merging with provenance, path matching, loading with a
//! cheap change-detecting cache, and format-preserving edits written atomically.

pub mod cache;
pub mod change;
pub mod defaults;
pub mod edit;
pub mod explain;
pub mod file_watch;
pub mod freshness;
pub mod fs_list;
pub mod matcher;
pub mod merge;
pub mod own_writes;
pub mod plugin;
pub mod project;
pub mod schema;
pub mod sensitive;
pub mod store;
pub mod view;
pub mod writer;

pub use cache::{
    global_path, global_path_from, load_effective, load_file, load_paths, project_path, Fallback,
    LoadedPolicy, PolicyCache, PolicyPaths, PolicySnapshot,
};
pub use defaults::{defaults, BUNDLED_SANDBOX_JSON};
pub use edit::{
    add_entry, add_string, remove_entry, remove_member, remove_string, replace_string, set_bool,
    EditOutcome,
};
pub use file_watch::{PolicyChanged, PolicyWatch, WatchError};
pub use matcher::{is_glob, landstrip_policy_json, resolve_entry, PolicyMatcher};
pub use merge::{
    merge, EffectivePolicy, FilesystemSources, NetworkSources, PlatformSources, PolicySources,
    Source,
};
pub use own_writes::{OwnWrites, Writer};
pub use schema::{
    parse_overrides, AppContainerMode, FilesystemConfig, FilesystemOverrides, FsList,
    NetworkConfig, NetworkOverrides, PolicyError, SandboxConfig, SandboxOverrides, ShellOverrides,
    ShellReadAccess, WindowsOverrides,
};
pub use store::{edit_file, remove_from_file, set_bool_in_file, write_atomic};
pub use writer::{PolicyWriter, UndoError, UndoneEdit};

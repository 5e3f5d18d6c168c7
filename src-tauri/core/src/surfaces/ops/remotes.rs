//! Adding and removing a remote machine (`ctl remote add|remove`, Settings): checked,
//! written to the settings file under its lock, then started or stopped at once.

use super::OpError;
use crate::app_settings::remote::{RemoteConfig, RemoteConfigError};
use crate::serving::remote::RemoteView;
use crate::serving::service::Service;

/// Saves `config` and starts keeping it connected; its view as it starts. Blocks (the
/// settings file); must run where a tokio runtime is entered (the blocking pool is).
pub fn remote_add(service: &Service, config: RemoteConfig) -> Result<RemoteView, OpError> {
    config.check()?;
    let file = service.settings_file().ok_or(OpError::NoSettings)?;
    let mut taken = false;
    file.update(|settings| {
        taken = settings.remotes.iter().any(|r| r.name == config.name);
        if !taken {
            settings.remotes.push(config.clone());
        }
    })?;
    if taken {
        return Err(RemoteConfigError::Exists(config.name).into());
    }
    let name = config.name.clone();
    service.remotes().start(config);
    service
        .remotes()
        .list()
        .into_iter()
        .find(|r| r.name == name)
        .ok_or(OpError::NoRemote(name))
}

/// Drops `name` from the settings and stops its connection; its requests leave this
/// desktop at once (they still wait on the remote).
pub fn remote_remove(service: &Service, name: &str) -> Result<(), OpError> {
    let file = service.settings_file().ok_or(OpError::NoSettings)?;
    let mut found = false;
    file.update(|settings| {
        let before = settings.remotes.len();
        settings.remotes.retain(|r| r.name != name);
        found = settings.remotes.len() != before;
    })?;
    let running = service.remotes().stop(name);
    if found || running {
        Ok(())
    } else {
        Err(OpError::NoRemote(name.to_owned()))
    }
}

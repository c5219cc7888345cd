//! Discovery: which tools `tools/list` advertises (spec 003 "Dynamic Tools").
//!
//! A configurable tool's state comes from layered choices, the narrowest that speaks winning:
//! the routing session's saved choice, then the connection profile's saved choice, then the
//! command line (`--enable-tool`/`--disable-tool`), then the environment
//! (`PADDOCK_ENABLED_TOOLS`/`PADDOCK_DISABLED_TOOLS`), then the built-in default. A tool enabled
//! in the profile is thus listed in every session of that profile unless the session itself
//! omitted it, which is the spec's "union of the connection profile and the routing session".

use paddock_store::Choices;

use crate::catalog::{CatalogTool, DiscoveryClass, ProcessOption, ToolDef};

/// Process options the daemon was started with.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProcessOptions {
    pub debug: bool,
}

impl ProcessOptions {
    pub fn satisfies(self, requirement: Option<ProcessOption>) -> bool {
        match requirement {
            None => true,
            Some(ProcessOption::Debug) => self.debug,
        }
    }
}

/// Which layer decided a tool's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layer {
    Builtin,
    Environment,
    CommandLine,
    Profile,
    Session,
}

impl Layer {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Builtin => "builtin",
            Self::Environment => "environment",
            Self::CommandLine => "command_line",
            Self::Profile => "profile",
            Self::Session => "session",
        }
    }
}

/// Raw startup inputs, before validation.
#[derive(Debug, Clone, Default)]
pub struct SelectionInput {
    pub env_enabled: Vec<String>,
    pub env_disabled: Vec<String>,
    pub cli_enabled: Vec<String>,
    pub cli_disabled: Vec<String>,
}

/// Why startup defaults are invalid; each fails daemon startup.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SelectionError {
    #[error("unknown tool `{name}` in {layer}; names are exact and case-sensitive")]
    Unknown { layer: &'static str, name: String },
    #[error("tool `{name}` is both enabled and disabled in {layer}")]
    Conflict { layer: &'static str, name: String },
}

/// The validated startup layers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StartupSelection {
    env: Choices,
    cli: Choices,
}

/// An always-on name given in a startup layer: ignored, but worth a log line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IgnoredName {
    pub layer: &'static str,
    pub name: String,
}

impl StartupSelection {
    /// Validates the startup layers against `catalog`.
    pub fn parse(
        catalog: &[CatalogTool],
        input: &SelectionInput,
    ) -> Result<(Self, Vec<IgnoredName>), SelectionError> {
        let mut ignored = Vec::new();
        let env = layer(
            catalog,
            "PADDOCK_ENABLED_TOOLS/PADDOCK_DISABLED_TOOLS",
            &input.env_enabled,
            &input.env_disabled,
            &mut ignored,
        )?;
        let cli = layer(
            catalog,
            "--enable-tool/--disable-tool",
            &input.cli_enabled,
            &input.cli_disabled,
            &mut ignored,
        )?;
        Ok((Self { env, cli }, ignored))
    }

    pub fn env(&self) -> &Choices {
        &self.env
    }

    pub fn cli(&self) -> &Choices {
        &self.cli
    }

    /// The state of configurable `tool` and the layer that decided it.
    pub fn resolve(&self, tool: &ToolDef, profile: &Choices, session: &Choices) -> (bool, Layer) {
        let DiscoveryClass::Configurable { default_enabled } = tool.discovery else {
            return (true, Layer::Builtin);
        };
        let name = tool.name;
        if let Some(enabled) = session.get(name) {
            return (*enabled, Layer::Session);
        }
        if let Some(enabled) = profile.get(name) {
            return (*enabled, Layer::Profile);
        }
        if let Some(enabled) = self.cli.get(name) {
            return (*enabled, Layer::CommandLine);
        }
        if let Some(enabled) = self.env.get(name) {
            return (*enabled, Layer::Environment);
        }
        (default_enabled, Layer::Builtin)
    }
}

/// Splits a comma-separated list, trimming blanks and dropping empty items.
pub fn parse_list(text: &str) -> Vec<String> {
    text.split(',')
        .map(str::trim)
        .filter(|item| !item.is_empty())
        .map(str::to_owned)
        .collect()
}

fn layer(
    catalog: &[CatalogTool],
    layer: &'static str,
    enabled: &[String],
    disabled: &[String],
    ignored: &mut Vec<IgnoredName>,
) -> Result<Choices, SelectionError> {
    let mut choices = Choices::new();
    for (names, value) in [(enabled, true), (disabled, false)] {
        for name in names {
            let Some(tool) = catalog
                .iter()
                .map(|tool| &tool.def)
                .find(|tool| tool.name == name.as_str())
            else {
                return Err(SelectionError::Unknown {
                    layer,
                    name: name.clone(),
                });
            };
            if tool.is_always_on() {
                ignored.push(IgnoredName {
                    layer,
                    name: name.clone(),
                });
                continue;
            }
            if choices.get(name).is_some_and(|existing| *existing != value) {
                return Err(SelectionError::Conflict {
                    layer,
                    name: name.clone(),
                });
            }
            choices.insert(name.clone(), value);
        }
    }
    Ok(choices)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::builtin;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|name| (*name).to_owned()).collect()
    }

    #[test]
    fn precedence_session_profile_cli_env_builtin() {
        let catalog = builtin();
        let tool = &catalog
            .iter()
            .find(|t| t.def.name == "listDevices")
            .unwrap()
            .def;
        let input = SelectionInput {
            env_disabled: names(&["listDevices"]),
            ..Default::default()
        };
        let (env_only, _) = StartupSelection::parse(&catalog, &input).unwrap();
        let none = Choices::new();
        assert_eq!(
            env_only.resolve(tool, &none, &none),
            (false, Layer::Environment)
        );

        let input = SelectionInput {
            env_disabled: names(&["listDevices"]),
            cli_enabled: names(&["listDevices"]),
            ..Default::default()
        };
        let (startup, _) = StartupSelection::parse(&catalog, &input).unwrap();
        assert_eq!(
            startup.resolve(tool, &none, &none),
            (true, Layer::CommandLine)
        );
        let off = Choices::from([("listDevices".to_owned(), false)]);
        let on = Choices::from([("listDevices".to_owned(), true)]);
        assert_eq!(startup.resolve(tool, &off, &none), (false, Layer::Profile));
        assert_eq!(startup.resolve(tool, &off, &on), (true, Layer::Session));
        assert_eq!(
            StartupSelection::default().resolve(tool, &none, &none),
            (true, Layer::Builtin)
        );
    }

    #[test]
    fn startup_failures_and_ignored_names() {
        let catalog = builtin();
        let unknown = SelectionInput {
            cli_enabled: names(&["listdevices"]),
            ..Default::default()
        };
        assert!(matches!(
            StartupSelection::parse(&catalog, &unknown),
            Err(SelectionError::Unknown { .. })
        ));
        let conflict = SelectionInput {
            env_enabled: names(&["listDevices"]),
            env_disabled: names(&["listDevices"]),
            ..Default::default()
        };
        assert!(matches!(
            StartupSelection::parse(&catalog, &conflict),
            Err(SelectionError::Conflict { .. })
        ));
        // Different layers may disagree: the command line wins.
        let across = SelectionInput {
            env_enabled: names(&["listDevices"]),
            cli_disabled: names(&["listDevices"]),
            ..Default::default()
        };
        assert!(StartupSelection::parse(&catalog, &across).is_ok());
        let always_on = SelectionInput {
            cli_disabled: names(&["setToolEnabled"]),
            ..Default::default()
        };
        let (selection, ignored) = StartupSelection::parse(&catalog, &always_on).unwrap();
        assert!(selection.cli().is_empty());
        assert_eq!(ignored.len(), 1);
        assert_eq!(parse_list(" a, ,b ,"), names(&["a", "b"]));
    }
}

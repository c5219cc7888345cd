//! Policy: which tools and bundle operations a deployment ever allows, fail-closed (spec 002
//! "Policy / allowlisting"). A tool outside the allowlist is not registered at all; an
//! operation outside a bundle's allowlist gets a typed error before the backend is called.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::str::FromStr;

use crate::catalog::{CatalogTool, ToolDef};

/// The three built-in profiles.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PolicyProfile {
    /// Reading tools only; bundles narrowed to their read operations.
    Readonly,
    /// Everything except tools and operations that create or destroy devices.
    NoCommerce,
    /// Every tool, no operation gates. Never implied: it must be chosen.
    Full,
}

impl PolicyProfile {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Readonly => "readonly",
            Self::NoCommerce => "no-commerce",
            Self::Full => "full",
        }
    }
}

impl fmt::Display for PolicyProfile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown policy profile `{0}`; expected `readonly`, `no-commerce` or `full`")]
pub struct UnknownProfile(pub String);

impl FromStr for PolicyProfile {
    type Err = UnknownProfile;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "readonly" => Ok(Self::Readonly),
            "no-commerce" => Ok(Self::NoCommerce),
            "full" => Ok(Self::Full),
            other => Err(UnknownProfile(other.to_owned())),
        }
    }
}

/// A tool allowlist and per-bundle operation allowlists. There is no implicit "everything":
/// an empty policy allows nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Policy {
    name: String,
    tools: BTreeSet<String>,
    operations: BTreeMap<String, BTreeSet<String>>,
    /// Why other tools are refused, for a caller that is told (a task's agent); a caller
    /// without one gets "unknown tool", as if they did not exist.
    refusal: Option<String>,
}

/// Device tools a task's agent never gets: they reach beyond the device's screen (an APK on
/// the daemon's machine, an app's database, page script and raw response bodies, and saved
/// logins, which belong to the connection that saved them) and `uploadFile` (reads the owner's files
/// on the daemon's machine).
const TASK_EXCLUDED: &[&str] = &[
    "installApp",
    "sqlQuery",
    "evaluate",
    "networkBody",
    "saveStorage",
    "listStorage",
    "deleteStorage",
    "uploadFile",
];

impl Policy {
    /// A policy that allows nothing.
    pub fn empty() -> Self {
        Self {
            name: "empty".to_owned(),
            ..Self::default()
        }
    }

    /// A custom policy.
    pub fn new(
        name: impl Into<String>,
        tools: BTreeSet<String>,
        operations: BTreeMap<String, BTreeSet<String>>,
    ) -> Self {
        Self {
            name: name.into(),
            tools,
            operations,
            refusal: None,
        }
    }

    /// The policy of a task's agent: the tools that act on or read the task's device, and
    /// nothing else — no acquisition, provisioning, discovery writes, tasks or plans — and not
    /// the device tools that reach beyond the screen ([`TASK_EXCLUDED`]): `installApp` (reads an
    /// APK from the daemon's machine), `sqlQuery` (an app's private database), `evaluate` and
    /// `networkBody` (page script, raw bodies) the saved-storage tools and `uploadFile`
    /// (reads the owner's files on the daemon's machine).
    pub fn task(catalog: &[CatalogTool]) -> Self {
        Self {
            name: "task".to_owned(),
            tools: catalog
                .iter()
                .map(|tool| &tool.def)
                .filter(|tool| !tool.platforms.is_empty() && !tool.plan_only && !tool.commerce)
                .filter(|tool| !TASK_EXCLUDED.contains(&tool.name))
                .map(|tool| tool.name.to_owned())
                .collect(),
            operations: BTreeMap::new(),
            refusal: Some(
                "a task's agent may use only the device tools of the task's device".to_owned(),
            ),
        }
    }

    /// Why a tool outside this policy is refused, when the caller is to be told.
    pub fn refusal(&self) -> Option<&str> {
        self.refusal.as_deref()
    }

    /// Every tool of `catalog`, with no operation gates.
    pub fn full_access(catalog: &[CatalogTool]) -> Self {
        Self::for_profile(PolicyProfile::Full, catalog)
    }

    /// The policy of a built-in profile over `catalog`.
    pub fn for_profile(profile: PolicyProfile, catalog: &[CatalogTool]) -> Self {
        let mut tools = BTreeSet::new();
        let mut operations = BTreeMap::new();
        for tool in catalog.iter().map(|tool| &tool.def) {
            let admitted: Option<BTreeSet<String>> = match profile {
                PolicyProfile::Full => Some(all_operations(tool)),
                PolicyProfile::NoCommerce => (!tool.commerce).then(|| {
                    tool.operations
                        .iter()
                        .filter(|operation| !operation.commerce)
                        .map(|operation| operation.name.to_owned())
                        .collect()
                }),
                PolicyProfile::Readonly => {
                    if tool.commerce {
                        None
                    } else if tool.is_bundle() {
                        let reads: BTreeSet<String> = tool
                            .operations
                            .iter()
                            .filter(|operation| operation.read_only && !operation.commerce)
                            .map(|operation| operation.name.to_owned())
                            .collect();
                        (!reads.is_empty()).then_some(reads)
                    } else {
                        (tool.hints.read_only || tool.is_always_on()).then(BTreeSet::new)
                    }
                }
            };
            let Some(admitted) = admitted else { continue };
            if tool.is_bundle() && admitted.is_empty() {
                continue;
            }
            tools.insert(tool.name.to_owned());
            if tool.is_bundle() && admitted != all_operations(tool) {
                operations.insert(tool.name.to_owned(), admitted);
            }
        }
        Self {
            name: profile.as_str().to_owned(),
            tools,
            operations,
            refusal: None,
        }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn allows_tool(&self, name: &str) -> bool {
        self.tools.contains(name)
    }

    /// Whether `operation` of bundle `tool` may run; ungated bundles allow every operation.
    pub fn allows_operation(&self, tool: &str, operation: &str) -> bool {
        self.operations
            .get(tool)
            .is_none_or(|allowed| allowed.contains(operation))
    }

    /// The narrowed operation set of `tool`, if the policy narrows it.
    pub fn narrowed_operations(&self, tool: &str) -> Option<&BTreeSet<String>> {
        self.operations.get(tool)
    }

    pub fn tool_names(&self) -> impl Iterator<Item = &str> {
        self.tools.iter().map(String::as_str)
    }

    /// What both policies allow: the tools in both, each bundle gated by both operation sets (a
    /// bundle left with no operation is dropped). A credential's profile narrows the
    /// deployment's policy this way and can never widen it. The name is `self`'s, then `+`
    /// and `other`'s; the refusal is `self`'s, else `other`'s.
    pub fn intersect(&self, other: &Self) -> Self {
        let mut tools = BTreeSet::new();
        let mut operations = BTreeMap::new();
        for tool in self.tools.intersection(&other.tools) {
            let gate = match (self.operations.get(tool), other.operations.get(tool)) {
                (None, None) => None,
                (Some(only), None) | (None, Some(only)) => Some(only.clone()),
                (Some(one), Some(two)) => Some(one.intersection(two).cloned().collect()),
            };
            match gate {
                Some(gate) if gate.is_empty() => continue,
                Some(gate) => {
                    operations.insert(tool.clone(), gate);
                }
                None => {}
            }
            tools.insert(tool.clone());
        }
        Self {
            name: format!("{}+{}", self.name, other.name),
            tools,
            operations,
            refusal: self.refusal.clone().or_else(|| other.refusal.clone()),
        }
    }
}

fn all_operations(tool: &ToolDef) -> BTreeSet<String> {
    tool.operations
        .iter()
        .map(|operation| operation.name.to_owned())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::builtin;

    #[test]
    fn profiles_over_the_builtin_catalog() {
        let catalog = builtin();
        let full = Policy::for_profile(PolicyProfile::Full, &catalog);
        assert_eq!(full.tool_names().count(), catalog.len());
        assert!(full.allows_operation("discovery", "reset"));

        let readonly = Policy::for_profile(PolicyProfile::Readonly, &catalog);
        assert!(readonly.allows_tool("listDevices"));
        assert!(readonly.allows_tool("setToolEnabled"));
        assert!(readonly.allows_operation("discovery", "status"));
        assert!(!readonly.allows_operation("discovery", "reset"));

        let no_commerce = Policy::for_profile(PolicyProfile::NoCommerce, &catalog);
        assert!(no_commerce.allows_operation("discovery", "reset"));
        assert!(no_commerce.narrowed_operations("discovery").is_none());
    }

    #[test]
    fn commerce_tools_and_operations_are_excluded() {
        use crate::catalog::{DiscoveryClass, Hints, OperationDef};
        const OPS: &[OperationDef] = &[
            OperationDef {
                name: "list",
                read_only: true,
                commerce: false,
            },
            OperationDef {
                name: "buy",
                read_only: false,
                commerce: true,
            },
        ];
        let mut bundle = builtin().remove(1);
        bundle.def.name = "shop";
        bundle.def.operations = OPS;
        let mut creator = builtin().remove(1);
        creator.def.name = "provisionDevice";
        creator.def.commerce = true;
        creator.def.hints = Hints {
            read_only: false,
            destructive: true,
            idempotent: false,
            open_world: false,
        };
        creator.def.discovery = DiscoveryClass::AlwaysOn;
        let catalog = vec![bundle, creator];
        let no_commerce = Policy::for_profile(PolicyProfile::NoCommerce, &catalog);
        assert!(!no_commerce.allows_tool("provisionDevice"));
        assert!(no_commerce.allows_operation("shop", "list"));
        assert!(!no_commerce.allows_operation("shop", "buy"));
        let readonly = Policy::for_profile(PolicyProfile::Readonly, &catalog);
        assert!(!readonly.allows_tool("provisionDevice"));
        assert_eq!(
            readonly.narrowed_operations("shop").map(|ops| ops.len()),
            Some(1)
        );
    }

    #[test]
    fn an_intersection_narrows_and_never_widens() {
        let set = |names: &[&str]| -> BTreeSet<String> {
            names.iter().map(|name| (*name).to_owned()).collect()
        };
        let deployment = Policy::new(
            "deployment",
            set(&["a", "b", "bundle", "gated"]),
            BTreeMap::from([
                ("gated".to_owned(), set(&["read", "write"])),
                ("bundle".to_owned(), set(&["list"])),
            ]),
        );
        let key = Policy::new(
            "key",
            set(&["b", "bundle", "gated", "extra"]),
            BTreeMap::from([
                ("gated".to_owned(), set(&["read", "delete"])),
                ("bundle".to_owned(), set(&["buy"])),
            ]),
        );
        let both = deployment.intersect(&key);
        assert_eq!(both.tool_names().collect::<Vec<_>>(), vec!["b", "gated"]);
        assert!(!both.allows_tool("a"), "only the deployment allows it");
        assert!(!both.allows_tool("extra"), "a key cannot widen");
        assert!(!both.allows_tool("bundle"), "no operation is left");
        assert!(both.allows_operation("gated", "read"));
        assert!(!both.allows_operation("gated", "write"));
        assert!(!both.allows_operation("gated", "delete"));
        assert_eq!(both.name(), "deployment+key");

        let catalog = builtin();
        let full = Policy::for_profile(PolicyProfile::Full, &catalog);
        let readonly = Policy::for_profile(PolicyProfile::Readonly, &catalog);
        assert_eq!(full.intersect(&readonly).tools, readonly.tools);
        assert_eq!(full.intersect(&readonly).operations, readonly.operations);
        assert_eq!(readonly.intersect(&full).tools, readonly.tools);
        assert_eq!(Policy::empty().intersect(&full).tool_names().count(), 0);
    }

    #[test]
    fn a_task_policy_keeps_the_device_tools_only() {
        let task = Policy::task(&builtin());
        for allowed in [
            "observe",
            "tapOn",
            "inputText",
            "screenshot",
            "openLink",
            "consoleLog",
            "networkLog",
            "configureDevice",
            "tabs",
            "files",
            "savePdf",
        ] {
            assert!(task.allows_tool(allowed), "{allowed}");
        }
        for refused in [
            "getWeb",
            "getAndroid",
            "provisionDevice",
            "releaseDevice",
            "setToolEnabled",
            "discovery",
            "runTask",
            "stopTask",
            "executePlan",
            "exportPlan",
            "installApp",
            "sqlQuery",
            "evaluate",
            "networkBody",
            "saveStorage",
            "listStorage",
            "deleteStorage",
            "uploadFile",
        ] {
            assert!(!task.allows_tool(refused), "{refused}");
        }
        assert!(task.refusal().is_some());
    }

    #[test]
    fn the_empty_policy_allows_nothing_and_profiles_parse_strictly() {
        let empty = Policy::empty();
        assert_eq!(empty.tool_names().count(), 0);
        assert!(!empty.allows_tool("setToolEnabled"));
        assert_eq!("readonly".parse(), Ok(PolicyProfile::Readonly));
        assert!("Full".parse::<PolicyProfile>().is_err());
        assert!("".parse::<PolicyProfile>().is_err());
    }
}

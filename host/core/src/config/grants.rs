//! Capabilities a guest may be granted. `log` is always allowed; everything else
//! is denied unless `settings.plugins.grants` grants it to the guest's role.

use std::fmt;

/// A host interface beyond `log`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Capability {
    /// `mcpw:plugin/catalog`: read servers, statuses and cached tools.
    Catalog,
    /// `mcpw:plugin/lifecycle`: connect and refresh servers.
    Lifecycle,
    /// `mcpw:plugin/calls`: call tools and read resources.
    Calls,
    /// `mcpw:plugin/embed`: text embeddings by the configured model.
    Embed,
}

impl Capability {
    /// Every capability.
    pub const ALL: [Capability; 4] = [
        Capability::Catalog,
        Capability::Lifecycle,
        Capability::Calls,
        Capability::Embed,
    ];

    /// The name used in config and in the WIT package.
    pub fn as_str(self) -> &'static str {
        match self {
            Capability::Catalog => "catalog",
            Capability::Lifecycle => "lifecycle",
            Capability::Calls => "calls",
            Capability::Embed => "embed",
        }
    }

    /// Parses a config name.
    pub fn parse(name: &str) -> Option<Capability> {
        Capability::ALL.into_iter().find(|c| c.as_str() == name)
    }
}

impl fmt::Display for Capability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The capabilities granted to one guest.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Grants {
    catalog: bool,
    lifecycle: bool,
    calls: bool,
    embed: bool,
}

impl Grants {
    /// Nothing but `log`.
    pub fn none() -> Self {
        Grants::default()
    }

    /// Everything.
    pub fn all() -> Self {
        Grants {
            catalog: true,
            lifecycle: true,
            calls: true,
            embed: true,
        }
    }

    /// What a role gets when the config grants it nothing: `embed` for
    /// ranking (vectors are what a ranker is for, and they say nothing of
    /// the servers), nothing for the others.
    pub fn default_for(role: crate::config::Role) -> Self {
        match role {
            crate::config::Role::Ranking => Grants::none().with(Capability::Embed),
            _ => Grants::none(),
        }
    }

    /// These grants plus `capability`.
    pub fn with(mut self, capability: Capability) -> Self {
        *self.slot(capability) = true;
        self
    }

    fn slot(&mut self, capability: Capability) -> &mut bool {
        match capability {
            Capability::Catalog => &mut self.catalog,
            Capability::Lifecycle => &mut self.lifecycle,
            Capability::Calls => &mut self.calls,
            Capability::Embed => &mut self.embed,
        }
    }

    /// Is `capability` granted?
    pub fn allows(&self, capability: Capability) -> bool {
        match capability {
            Capability::Catalog => self.catalog,
            Capability::Lifecycle => self.lifecycle,
            Capability::Calls => self.calls,
            Capability::Embed => self.embed,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deny_by_default_grant_by_name() {
        let g = Grants::none();
        assert!(Capability::ALL.iter().all(|c| !g.allows(*c)));
        let g = g.with(Capability::parse("catalog").unwrap());
        assert!(g.allows(Capability::Catalog));
        assert!(!g.allows(Capability::Calls));
        assert_eq!(
            Capability::parse("log"),
            None,
            "log is not a grantable capability: it is always on"
        );
    }

    #[test]
    fn ranking_may_embed_unless_its_grants_are_listed() {
        use crate::config::Role;
        assert!(Grants::default_for(Role::Ranking).allows(Capability::Embed));
        assert!(!Grants::default_for(Role::Ranking).allows(Capability::Calls));
        assert!(!Grants::default_for(Role::Naming).allows(Capability::Embed));
    }
}

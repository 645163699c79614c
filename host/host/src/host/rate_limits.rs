//! Rate limits as the host applies them: the buckets a call draws from
//! (`settings.rateLimit`, a server's `rateLimit`), per client token.

use super::call_path::CallPath;

/// A call a rate limit refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RateLimited {
    /// The setting of the limit.
    pub setting: String,
    /// Its rate.
    pub rate: crate::config::rate::Rate,
    /// When its bucket holds a call again.
    pub retry_after: std::time::Duration,
}

impl std::fmt::Display for RateLimited {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "rate limit reached: {} allows {} for each client; retry after {:.1} s",
            self.setting,
            self.rate.text(),
            self.retry_after.as_secs_f64()
        )
    }
}

impl CallPath {
    /// Takes one call of `server`'s `tool` by the client `client` from each
    /// rate limit's bucket it draws from (`own`: the client's own limit, of
    /// its token or groups); the first empty one refuses it, saying which
    /// limit and when to try again. A read (`tool` empty) draws from the
    /// buckets of the whole server (`"60/min"`, `"*"`).
    pub(crate) async fn rate_check(
        &self,
        client: &str,
        own: Option<&(String, crate::config::rate::Rate)>,
        server: &str,
        tool: &str,
    ) -> Result<(), RateLimited> {
        let config = self.config();
        let mut buckets: Vec<(String, String, crate::config::rate::Rate)> = Vec::new();
        if let Some((setting, rate)) = own {
            // One bucket per setting: groups may give different tools theirs.
            buckets.push((format!("{client}|own|{setting}"), setting.clone(), *rate));
        }
        if let Some(rate) = config.settings.rate_limit {
            buckets.push((format!("{client}|*"), "settings.rateLimit".into(), rate));
        }
        if let Some(rule) = config
            .server(server)
            .and_then(|s| s.config.rate_limit.as_ref())
        {
            for (glob, rate) in rule.buckets(tool) {
                let setting = match glob.as_str() {
                    "" => format!("mcpServers.{server}.rateLimit"),
                    g => format!("mcpServers.{server}.rateLimit[{g:?}]"),
                };
                buckets.push((format!("{client}|{server}|{glob}"), setting, rate));
            }
        }
        for (key, setting, rate) in buckets {
            if let Err(retry_after) = self.buckets.take(&key, rate).await {
                return Err(RateLimited {
                    setting,
                    rate,
                    retry_after,
                });
            }
        }
        Ok(())
    }
}

//! The validated configuration: servers and settings, as the rest of mcpw uses them.

use crate::config::{Grants, Limits, PrefixMode, Role};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// How `mcpw serve` shows upstream tools to the agent (`settings.exposure`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Exposure {
    /// One `mcp` tool.
    #[default]
    Proxy,
    /// Direct tools plus `ToolSearch`.
    ToolSearch,
    /// Every tool.
    Direct,
    /// One code tool: the agent calls tools from scripts (code mode).
    Code,
    /// Direct while the tools' definitions fit `settings.autoExposureBudget`,
    /// else tool-search: decided for each session.
    Auto,
}

impl Exposure {
    /// Parses `proxy`, `tool-search`, `direct`, `code` or `auto`.
    pub fn parse(s: &str) -> Option<Exposure> {
        match s {
            "proxy" => Some(Exposure::Proxy),
            "tool-search" => Some(Exposure::ToolSearch),
            "direct" => Some(Exposure::Direct),
            "code" => Some(Exposure::Code),
            "auto" => Some(Exposure::Auto),
            _ => None,
        }
    }

    /// The name [`Exposure::parse`] takes.
    pub fn name(self) -> &'static str {
        match self {
            Exposure::Proxy => "proxy",
            Exposure::ToolSearch => "tool-search",
            Exposure::Direct => "direct",
            Exposure::Code => "code",
            Exposure::Auto => "auto",
        }
    }

    /// `--exposure NAME` if given, else `settings.exposure`, else proxy.
    pub fn chosen(arg: Option<&str>, setting: Option<Exposure>) -> Result<Exposure, String> {
        match arg {
            Some(name) => Exposure::parse(name).ok_or_else(|| {
                format!("unknown exposure {name:?}: use proxy, tool-search, direct, code or auto")
            }),
            None => Ok(setting.unwrap_or_default()),
        }
    }
}

/// Default `settings.toolSearchBudget`: tokens the ToolSearch description may
/// take, outline of the deferred tools included.
const DEFAULT_TOOL_SEARCH_BUDGET: usize = 400;

/// Default `settings.autoExposureBudget`: tokens the tool definitions may take
/// for `auto` exposure to list them all: about a dozen tools.
pub const DEFAULT_AUTO_EXPOSURE_BUDGET: usize = 2000;

/// Default `settings.maxRequestsInFlight`: requests of one client (a stdio
/// session, an HTTP session) that may wait for their answers at once; a
/// client that sends more is not read (stdio) or told to retry (HTTP 429),
/// so that its unread answers cannot fill mcpw's memory.
const DEFAULT_MAX_REQUESTS_IN_FLIGHT: usize = 64;

/// `settings.captureStats`: `true`, or `{"path", "flushDelayMs"}`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CaptureStats {
    /// The stats file; default `$XDG_STATE_HOME/mcpw/stats.json`.
    pub path: Option<PathBuf>,
    /// How long recorded calls wait before they are written, in ms (default 500).
    pub flush_delay_ms: Option<u64>,
}

/// When a server is connected.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Lifecycle {
    /// On first use; idles out (the default).
    #[default]
    Lazy,
    /// At start-up; does not idle out unless told to.
    Eager,
    /// At start-up, reconnected by the health check.
    KeepAlive,
}

impl Lifecycle {
    /// Parses a config value.
    pub fn parse(s: &str) -> Option<Lifecycle> {
        match s {
            "lazy" => Some(Lifecycle::Lazy),
            "eager" => Some(Lifecycle::Eager),
            "keep-alive" => Some(Lifecycle::KeepAlive),
            _ => None,
        }
    }
}

/// Which HTTP transport a `url` server speaks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum HttpKind {
    /// Streamable HTTP first, legacy SSE as a fallback (no `type`, or `http`).
    #[default]
    Auto,
    /// Legacy HTTP+SSE only (`type: "sse"`).
    Sse,
}

/// How to reach a server.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum Transport {
    /// A child process speaking MCP on stdin/stdout.
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Extra environment variables.
        env: Vec<(String, String)>,
        /// Working directory.
        cwd: Option<String>,
    },
    /// An HTTP endpoint.
    Http {
        /// The endpoint URL.
        url: String,
        /// Extra request headers.
        headers: Vec<(String, String)>,
        /// Streamable HTTP (with SSE fallback) or SSE only.
        kind: HttpKind,
    },
    /// A WebAssembly component mcpw runs in its sandbox, speaking MCP on its
    /// standard input and output (a `wasi:cli/command`).
    Component {
        /// The component: a file, or an `https://` URL.
        component: String,
        /// The sha256 digest its bytes must have (required for a URL).
        sha256: Option<String>,
        /// What it may reach.
        permissions: super::permissions::Permissions,
    },
}

impl Transport {
    /// `stdio` or `http` (either HTTP transport), as traces and the live
    /// page name it.
    pub fn family(&self) -> &'static str {
        match self {
            Transport::Stdio { .. } => "stdio",
            Transport::Http { .. } => "http",
            Transport::Component { .. } => "component",
        }
    }
}

/// A server's `directTools`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DirectTools {
    /// `true`.
    All,
    /// `false` or absent.
    #[default]
    None,
    /// A list of tool names.
    Only(Vec<String>),
}

/// One server, validated and interpolated.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerConfig {
    /// `enabled` (or the inverse of `disabled`).
    pub enabled: bool,
    /// How to reach it.
    pub transport: Transport,
    /// `auth`: `bearer`, `oauth`, or none.
    pub auth: Option<String>,
    /// `bearerToken`.
    pub bearer_token: Option<String>,
    /// `bearerTokenEnv`.
    pub bearer_token_env: Option<String>,
    /// `lifecycle`.
    pub lifecycle: Lifecycle,
    /// `idleTimeout` in minutes; `None` means the global setting.
    pub idle_timeout: Option<f64>,
    /// `startupTimeoutMs`.
    pub startup_timeout_ms: u64,
    /// `callTimeoutMs`; `None` means `settings.callTimeoutMs`.
    pub call_timeout_ms: Option<u64>,
    /// `exposeResources`.
    pub expose_resources: bool,
    /// `directTools`.
    pub direct_tools: DirectTools,
    /// `excludeTools`.
    pub exclude_tools: Vec<String>,
    /// `includeTools`: when not empty, only these tools are exposed.
    pub include_tools: Vec<String>,
    /// `debug`: show the server's stderr.
    pub debug: bool,
    /// `searchKeywords`: extra words that describe the server to search.
    pub search_keywords: Vec<String>,
    /// `oauth`: how mcpw logs in when the server asks for it.
    pub oauth: OAuthConfig,
    /// `approve`: which of its tools' calls the user approves; none: the
    /// settings say.
    pub approve: Option<super::ApproveRule>,
    /// `rateLimit`: how often each client may call it (or the tools of a glob).
    pub rate_limit: Option<super::rate::RateRule>,
    /// `resultBudget`: tokens its results may take (or those of a glob's tools).
    pub result_budget: Option<super::results::ByTool<usize>>,
    /// `resultFormat`: how its structured results are written (or those of a glob's tools).
    pub result_format: Option<super::results::ByTool<super::results::Format>>,
}

/// How an OAuth client gets its tokens (`oauth.grantType`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum GrantType {
    /// A person logs in in a browser (`authorization_code`, the default).
    #[default]
    AuthorizationCode,
    /// mcpw is the client itself, with its own secret (`client_credentials`).
    ClientCredentials,
    /// Cross-app access (`id-jag`): the person's ID token from the
    /// enterprise identity provider is exchanged there for an identity
    /// assertion that the server's authorization server takes for a token.
    #[serde(rename = "id-jag")]
    IdJag,
    /// Token exchange (`token-exchange`, RFC 8693): each caller's own access
    /// token, from an issuer the server trusts too, is exchanged there for a
    /// token of the server's; one login per person, none to make.
    #[serde(rename = "token-exchange")]
    TokenExchange,
}

impl GrantType {
    /// Does a connection take its tokens itself, with no person (nothing to
    /// open in a browser)?
    pub fn unattended(self) -> bool {
        matches!(self, GrantType::ClientCredentials | GrantType::IdJag)
    }

    /// What the grant is, for messages.
    pub fn describe(self) -> &'static str {
        match self {
            GrantType::AuthorizationCode => "the authorization code grant",
            GrantType::ClientCredentials => "the client credentials grant",
            GrantType::IdJag => "the exchange of the ID token (cross-app access)",
            GrantType::TokenExchange => "the exchange of the caller's token (RFC 8693)",
        }
    }
}

/// `oauth.identityProvider`: the enterprise identity provider of the
/// `id-jag` grant, where the person's ID token is exchanged.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct IdentityProvider {
    /// `issuer`: its issuer identifier, as its tokens name it.
    pub issuer: String,
    /// `tokenEndpoint`; read from its OpenID metadata when unset.
    pub token_endpoint: Option<String>,
    /// `clientId`: the client mcpw is known as there.
    pub client_id: String,
    /// `clientSecret` of that client, if it has one (`${VAR}`, `!command`).
    #[serde(skip)]
    pub client_secret: Option<String>,
    /// `idToken`: the person's ID token (`${VAR}`, or a `!command` run at
    /// each exchange, so that a fresh one is used). `None` on a per-person
    /// server: each person's own comes from signing them in there.
    #[serde(skip)]
    pub id_token: Option<String>,
}

/// A server's `oauth`: an object, or `false` to never log in.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OAuthConfig {
    /// False for `"oauth": false`: a 401 is reported, never answered with a login.
    pub enabled: bool,
    /// `clientId`: a client registered with the authorization server beforehand.
    pub client_id: Option<String>,
    /// `clientSecret`, with `${VAR}` and `!command` like other secrets.
    #[serde(skip)]
    pub client_secret: Option<String>,
    /// `scope`: the scopes to ask for (space-separated), instead of the server's hint.
    pub scope: Option<String>,
    /// `clientMetadataUrl`: an HTTPS URL of mcpw's client ID metadata document.
    pub client_metadata_url: Option<String>,
    /// `callbackPort`: the loopback port of the redirect; an OS-assigned one when unset.
    pub callback_port: Option<u16>,
    /// `grantType`.
    pub grant_type: GrantType,
    /// `privateKey`: a PEM key (or `!command`) that signs the client's
    /// assertion (RFC 7523) in the client credentials grant, instead of a secret.
    #[serde(skip)]
    pub private_key: Option<String>,
    /// `signingAlgorithm` of that assertion: RS256 (default), RS384, RS512, ES256 or ES384.
    pub signing_algorithm: Option<String>,
    /// `identityProvider`: where the `id-jag` grant exchanges the ID token.
    pub identity_provider: Option<IdentityProvider>,
    /// `perPerson`: each principal of the gateway logs in for themselves,
    /// and their calls go out with their own login, never another's.
    pub per_person: bool,
}

impl Default for OAuthConfig {
    fn default() -> Self {
        OAuthConfig {
            enabled: true,
            client_id: None,
            client_secret: None,
            scope: None,
            client_metadata_url: None,
            callback_port: None,
            grant_type: GrantType::default(),
            private_key: None,
            signing_algorithm: None,
            identity_provider: None,
            per_person: false,
        }
    }
}

impl OAuthConfig {
    /// Does a connection take its tokens itself, as no one (the client's
    /// own grant, or cross-app access with the configured ID token)? A
    /// per-person server's tokens are each person's.
    pub fn unattended(&self) -> bool {
        self.grant_type.unattended() && !self.per_person
    }
}

impl ServerConfig {
    /// Does mcpw log in to this server when it asks (an HTTP server with
    /// neither static credentials nor `"oauth": false`)?
    pub fn oauth_applies(&self) -> bool {
        self.oauth.enabled
            && matches!(self.transport, Transport::Http { .. })
            && !self.has_credentials()
    }

    /// Does each principal use their own login here (`oauth.perPerson` on a
    /// server mcpw logs in to)?
    pub fn per_person(&self) -> bool {
        (self.oauth.per_person || self.exchanges()) && self.oauth_applies()
    }

    /// Does each caller's own token get exchanged for this server's
    /// (`"grantType": "token-exchange"`)?
    pub fn exchanges(&self) -> bool {
        self.oauth.grant_type == GrantType::TokenExchange
    }

    /// Does each person sign in at the identity provider for their own ID
    /// token, which is exchanged for this server's token (cross-app access
    /// with `oauth.perPerson`)?
    pub fn signs_in_for_id_tokens(&self) -> bool {
        self.oauth.grant_type == GrantType::IdJag && self.per_person()
    }

    /// Does this server send credentials (a bearer token or an `Authorization` header)?
    pub fn has_credentials(&self) -> bool {
        self.bearer_token.is_some()
            || self.bearer_token_env.is_some()
            || matches!(&self.transport, Transport::Http { headers, .. }
                if headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("authorization")))
    }
}

/// Default `startupTimeoutMs`.
pub const DEFAULT_STARTUP_TIMEOUT_MS: u64 = 30_000;
/// Default `settings.callTimeoutMs`: how long one call may take.
const DEFAULT_CALL_TIMEOUT_MS: u64 = 120_000;
/// Default `settings.idleTimeout`, in minutes.
const DEFAULT_IDLE_TIMEOUT_MIN: f64 = 10.0;

/// Where a definition came from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Origin {
    /// `user`, `import`, or `project`.
    pub kind: SourceKind,
    /// The import it came through (`cursor`, `codex`, ...), for imports.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub import: Option<String>,
    /// The file.
    pub path: PathBuf,
    /// Who wrote it, which decides what it may do
    /// ([`super::settings::PROVENANCE`]).
    pub provenance: Provenance,
}

/// Who wrote a definition mcpw holds. What each may do is one table,
/// [`super::settings::PROVENANCE`]; every loader and `mcpw add` read it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Provenance {
    /// The user's own mcpw file.
    User,
    /// Another client's user-level file (`~/.cursor/mcp.json`, …) that the
    /// user imports.
    UserClient,
    /// A project's mcpw file (`.mcp.json`, `.mcpw/mcp.json`).
    Project,
    /// Another client's file inside a project (`.vscode/mcp.json`,
    /// `.pi/mcp.json`), or a client's user-level file that only a project's
    /// `imports` pulls in.
    ProjectClient,
    /// An entry of an MCP registry, as `mcpw add` plans it.
    Registry,
    /// A request of the agent (`mcp({add})`), for a registry entry.
    Agent,
}

/// The kind of a config source.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SourceKind {
    /// The user's own file.
    User,
    /// Another tool's config, imported.
    Import,
    /// A file in the project directory.
    Project,
}

impl std::fmt::Display for SourceKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            SourceKind::User => "user",
            SourceKind::Import => "import",
            SourceKind::Project => "project",
        })
    }
}

/// A configured server.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Server {
    /// Its name.
    pub name: String,
    /// Its validated config.
    pub config: ServerConfig,
    /// Where it was defined.
    pub origin: Origin,
    /// The definition as written, before interpolation (for `config show`).
    #[serde(skip)]
    pub raw: serde_json::Value,
}

/// `settings.plugins`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PluginSettings {
    /// User guests per role, resolved against the file that named them.
    pub guests: BTreeMap<Role, PathBuf>,
    /// Capabilities granted per role.
    pub grants: BTreeMap<Role, Grants>,
    /// The tools each role's guest may call with the `calls` capability
    /// (globs over the agent-facing names); none where a role has no list.
    pub calls: BTreeMap<Role, Vec<String>>,
    /// Sandbox limits.
    pub limits: Limits,
}

/// `settings`, merged user → project.
#[derive(Clone, Debug, PartialEq)]
pub struct Settings {
    /// `toolPrefix`.
    pub tool_prefix: PrefixMode,
    /// `idleTimeout`, minutes; 0 = never.
    pub idle_timeout: f64,
    /// `callTimeoutMs`: the default time one tool call may take.
    pub call_timeout_ms: u64,
    /// `plugins`.
    pub plugins: PluginSettings,
    /// `searchProfile`: the ranking guest's scoring profile; `None` for its default.
    pub search_profile: Option<String>,
    /// `exposure`: how `mcpw serve` shows tools when `--exposure` is not given.
    pub exposure: Option<Exposure>,
    /// `toolSearchBudget`: tokens the ToolSearch description may take.
    pub tool_search_budget: usize,
    /// `autoExposureBudget`: tokens the tool definitions may take for `auto`
    /// exposure to list them all; beyond, it serves tool-search.
    pub auto_exposure_budget: usize,
    /// `perPerson.maxConnections`: most person connections (servers of
    /// `oauth.perPerson`) a process keeps open at once; `None`: mcpw's default.
    pub per_person_max_connections: Option<usize>,
    /// `codeMode`: the code tool beside the others in tool-search and direct exposure.
    pub code_mode: bool,
    /// `approve` (user file only): which calls the user approves, by the
    /// tools' agent-facing names.
    pub approve: super::ApproveRule,
    /// `approveWithoutClient: "allow"` (user file only): a call that needs
    /// approval runs when the client cannot be asked (else it is refused).
    pub approve_without_client: bool,
    /// `pinTools` (user file only): the user's own servers' tool definitions
    /// are pinned as a project's are (see `mcpw_host::pins`).
    pub pin_tools: bool,
    /// `rateLimit` (user file only): how often each client may call at all.
    pub rate_limit: Option<super::rate::Rate>,
    /// `guards` (user file only): guard guests, in the order they check.
    pub guards: Vec<std::path::PathBuf>,
    /// `guardFailure: "open"` (user file only): a result stays as it was
    /// when a guard cannot decide on it (else it is withheld). A call a
    /// guard cannot decide on is always refused.
    pub guards_fail_open: bool,
    /// `resultBudget`, `resultFormat` and `toonEncode`: how big results are guarded.
    pub results: super::results::ResultSettings,
    /// `search`: the embedding model of search by meaning.
    pub search: super::search::SearchSettings,
    /// `scriptLimits`: the limits of a script (a call may ask for lower ones).
    pub script_limits: super::ScriptLimits,
    /// `captureStats`: call statistics, when on.
    pub capture_stats: Option<CaptureStats>,
    /// `maxRequestsInFlight` (user file only): requests of one client that
    /// may wait for their answers at once (at least 1).
    pub max_requests_in_flight: usize,
    /// `credentialStore`: where OAuth credentials are kept.
    pub credential_store: StoreKind,
    /// `registry`: the base URL of the MCP registry `mcpw add` searches
    /// (a team may run its own copy); the official one when unset.
    pub registry: Option<String>,
    /// `sharedState`: the Redis URL replicas share state through
    /// (`$MCPW_SHARED_STATE` and `--shared-state` win over it).
    pub shared_state: Option<String>,
    /// `sharedStateKey`: the secret that seals credentials in shared state
    /// (`${VAR}` or `!command`; `$MCPW_SHARED_STATE_KEY` wins over it).
    pub shared_state_key: Option<String>,
    /// `allowInstall` (user file only): whether agents may add servers;
    /// `None` when unset (ask the user, when the client can be asked).
    pub allow_install: Option<AllowInstall>,
    /// `audit` (user file only): where audit lines go; `None` for none.
    pub audit: Option<crate::audit::AuditConfig>,
    /// Every setting as merged (paths in `plugins` resolved), including ones this
    /// version does not interpret: for showing, never for reading.
    pub raw: serde_json::Map<String, serde_json::Value>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            tool_prefix: PrefixMode::Server,
            idle_timeout: DEFAULT_IDLE_TIMEOUT_MIN,
            call_timeout_ms: DEFAULT_CALL_TIMEOUT_MS,
            plugins: PluginSettings::default(),
            search_profile: None,
            exposure: None,
            tool_search_budget: DEFAULT_TOOL_SEARCH_BUDGET,
            auto_exposure_budget: DEFAULT_AUTO_EXPOSURE_BUDGET,
            per_person_max_connections: None,
            code_mode: false,
            approve: Default::default(),
            approve_without_client: false,
            pin_tools: false,
            rate_limit: None,
            guards: Vec::new(),
            guards_fail_open: false,
            results: Default::default(),
            search: Default::default(),
            script_limits: Default::default(),
            capture_stats: None,
            max_requests_in_flight: DEFAULT_MAX_REQUESTS_IN_FLIGHT,
            credential_store: Default::default(),
            shared_state: None,
            registry: None,
            shared_state_key: None,
            allow_install: None,
            audit: None,
            raw: Default::default(),
        }
    }
}

/// `serve`: who may connect to `mcpw serve --http`. Read from the user file
/// only (see [`crate::config::load`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Serve {
    /// `tokens`, the valid entries in file order.
    pub tokens: Vec<ServeToken>,
    /// `oauth`: access tokens from identity providers, when set.
    pub oauth: Option<ServeOAuth>,
    /// `publicUrl`: the address browsers reach the gateway at (behind a load
    /// balancer, its address), where people come back to after signing in
    /// to a server for themselves (`<publicUrl>/oauth/callback`); else the
    /// origin of `oauth.resource`, when set.
    pub public_url: Option<String>,
    /// Some entry of `tokens` was invalid and left out: serving HTTP then
    /// refuses to start rather than admit clients differently than written.
    pub broken: bool,
    /// `serve` as written (for `config show`, secrets masked there).
    pub raw: Option<serde_json::Value>,
}

/// Where a person's browser comes back to after signing in to a server,
/// under the gateway's public address.
pub const SIGN_IN_CALLBACK: &str = "/oauth/callback";

impl Serve {
    /// The address of the gateway's sign-in callback, as browsers reach it:
    /// under `publicUrl`, else under the origin of `oauth.resource`; `None`
    /// when neither is set.
    pub fn sign_in_callback(&self) -> Option<String> {
        let base = match (&self.public_url, &self.oauth) {
            (Some(url), _) => url.clone(),
            (None, Some(oauth)) => url::Url::parse(&oauth.resource)
                .ok()?
                .origin()
                .ascii_serialization(),
            (None, None) => return None,
        };
        Some(format!("{base}{SIGN_IN_CALLBACK}"))
    }
}

/// `serve.oauth`: `mcpw serve --http` as an OAuth 2.1 protected resource.
/// It admits access tokens (JWTs) that a configured provider signed for its
/// resource URI, and maps each to a principal from the token's claims.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServeOAuth {
    /// `resource`: the gateway's public URL of its MCP endpoint (behind a
    /// load balancer, the URL clients use): the audience a token must name
    /// (RFC 8707), and what the protected resource metadata says.
    pub resource: String,
    /// `issuers`: the providers whose tokens are admitted.
    pub issuers: Vec<OAuthIssuer>,
    /// `scopes`: scopes every token must carry.
    pub scopes: Vec<String>,
    /// `groups`: what each group's members see; a principal sees what its
    /// groups see together. Empty: every principal sees every server.
    pub groups: Vec<GroupPolicy>,
}

/// One identity provider (`serve.oauth.issuers[i]`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OAuthIssuer {
    /// `issuer`: its issuer identifier, as its tokens' `iss` says.
    pub issuer: String,
    /// `jwksUri`: where its signing keys are; else from its OpenID
    /// configuration.
    pub jwks_uri: Option<String>,
    /// `groupsClaim`: the claim that lists a principal's groups or roles
    /// (`groups` unless told).
    pub groups_claim: String,
    /// `audience`: the `aud` its tokens name for this gateway, when not
    /// the `resource` (Entra ID's v2.0 tokens name the API's client id).
    pub audience: Option<String>,
    /// `introspection`: how opaque access tokens are checked (RFC 7662);
    /// `None`: only its JWTs are admitted.
    pub introspection: Option<OAuthIntrospection>,
    /// `signIn`: the gateway's OpenID client at the issuer, which signs a
    /// person's browser in before it is sent to a server's authorization
    /// page, so that a sign-in link makes a login only for the person it
    /// was given to. `None`: links are not checked.
    pub sign_in: Option<GatewayClient>,
}

/// The gateway's own client at an issuer (`serve.oauth.issuers[i].signIn`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GatewayClient {
    /// `clientId`.
    pub client_id: String,
    /// `clientSecret` or `clientSecretEnv`: that client's secret.
    pub secret: TokenSource,
}

/// Checking an issuer's opaque tokens at its introspection endpoint
/// (`serve.oauth.issuers[i].introspection`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OAuthIntrospection {
    /// `clientId`: the gateway's client at the issuer, which introspects.
    pub client_id: String,
    /// `clientSecret` or `clientSecretEnv`: that client's secret.
    pub secret: TokenSource,
    /// `endpoint`: where; else the issuer's metadata's
    /// `introspection_endpoint`.
    pub endpoint: Option<String>,
    /// `cacheSeconds`: an answer is reused at most this long, so a revoked
    /// token is refused at most this long after its revocation.
    pub cache_seconds: u64,
}

/// What one group's members see (`serve.oauth.groups.<name>`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupPolicy {
    /// The group's name, as the groups claim lists it.
    pub name: String,
    /// `servers`: the servers its members see; `None` for every server.
    pub servers: Option<Vec<String>>,
    /// `tools`: globs over `server/tool`, the only tools its members see;
    /// `None` for every tool of its servers.
    pub tools: Option<Vec<String>>,
    /// `approve`: which of its members' calls they must approve (globs
    /// over `server/tool`), beside what the servers and settings ask.
    pub approve: Option<crate::config::ApproveRule>,
    /// `rateLimit`: the calls each member may make, all servers together.
    pub rate_limit: Option<crate::config::rate::Rate>,
    /// `issuers`: the issuers whose tokens may put a principal in it;
    /// `None`: any of `serve.oauth.issuers`.
    pub issuers: Option<Vec<String>>,
}

/// One client's bearer token (`serve.tokens[i]`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServeToken {
    /// `name`: unique; identifies the client in logs and its session.
    pub name: String,
    /// Its position in `serve.tokens`, for messages.
    pub index: usize,
    /// Where the token's value comes from.
    pub source: TokenSource,
    /// `servers`: the only servers this client sees; `None` for every server.
    pub servers: Option<Vec<String>>,
    /// `tools`: globs over `server/tool`, the only tools this client sees;
    /// `None` for every tool of its servers.
    pub tools: Option<Vec<String>>,
    /// `approve`: which of its calls must be approved (globs over
    /// `server/tool`), beside what the servers and settings ask.
    pub approve: Option<crate::config::ApproveRule>,
    /// `rateLimit`: the calls it may make, all servers together.
    pub rate_limit: Option<crate::config::rate::Rate>,
}

/// Where a client token's value comes from.
#[derive(Clone, PartialEq, Eq)]
pub enum TokenSource {
    /// `token`, interpolated: the value, or a `!command` that prints it.
    Value(String),
    /// `tokenEnv`: the environment variable holding it.
    Env(String),
}

// Written by hand so that a token's value never reaches a log or an error.
impl std::fmt::Debug for TokenSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            // A command is not the secret (`config show` shows it too).
            TokenSource::Value(v) if v.starts_with('!') && !v.starts_with("!!") => {
                write!(f, "token {v:?}")
            }
            TokenSource::Value(_) => write!(f, "token {:?}", super::show::MASK),
            TokenSource::Env(var) => write!(f, "tokenEnv {var:?}"),
        }
    }
}

/// `settings.allowInstall`, read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AllowInstall {
    /// The user approves each plan.
    Ask,
    /// Agents add nothing.
    Deny,
    /// Servers whose registry name matches one of these are added without
    /// asking; others are asked about.
    Globs(Vec<String>),
}

impl AllowInstall {
    /// The setting's value, if it is one.
    pub fn parse(v: &serde_json::Value) -> Option<AllowInstall> {
        match v {
            serde_json::Value::String(s) if s == "ask" => Some(AllowInstall::Ask),
            serde_json::Value::String(s) if s == "deny" => Some(AllowInstall::Deny),
            serde_json::Value::Array(globs) => globs
                .iter()
                .map(|g| g.as_str().map(str::to_string))
                .collect::<Option<_>>()
                .map(AllowInstall::Globs),
            _ => None,
        }
    }
}

/// Where credentials are kept (`settings.credentialStore`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum StoreKind {
    /// The OS keyring (Secret Service, Keychain, Windows Credential Manager).
    #[default]
    Keyring,
    /// A 0600 JSON file in a 0700 directory under the config directory.
    File,
}

impl StoreKind {
    /// Parses the setting's value: `"keyring"` or `"file"`.
    pub fn parse(s: &str) -> Option<StoreKind> {
        match s {
            "keyring" => Some(StoreKind::Keyring),
            "file" => Some(StoreKind::File),
            _ => None,
        }
    }
}

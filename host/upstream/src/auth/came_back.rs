//! The browser back at the gateway's sign-in callback: the sign-in under
//! way its state names is finished, whether it was begun at a server's
//! authorization server ([`super::sign_in`]) or at the person's identity
//! provider ([`super::identify`]); one at the identity provider that leads
//! on to a server's page lets that one finish.

use super::finished::{Configured, SignedIn, digest, query};
use super::identify::Identifying;
use super::store::Vault;
use super::{AuthFailure, sign_in};

/// Finishes the sign-in the browser was sent back from, at `redirect` (the
/// callback's full address) with its `Cookie` header, with the config as
/// it is now.
pub async fn finish(
    vault: &Vault,
    (redirect, cookies): (&str, Option<&str>),
    configured: &Configured<'_>,
) -> Result<SignedIn, AuthFailure> {
    let state = query(redirect, "state")
        .ok_or_else(|| AuthFailure::Callback("no sign-in is named here".into()))?;
    let kept = vault.login_under_way(&state).await?;
    let Some(identifying) = kept.as_ref().and_then(Identifying::of) else {
        let back = (state.as_str(), redirect, cookies);
        return sign_in::finish(vault, back, kept, configured).await;
    };
    let done = identifying
        .finish(vault, (&state, redirect), configured)
        .await?;
    if let Some(onward) = &done.onward {
        let bound = digest(&onward.cookie.1);
        sign_in::release(vault, &onward.address, (&done.owner, bound)).await?;
    }
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::store::StoreKind;
    use serde_json::json;

    /// A server's sign-in begun held (behind the identity provider) is
    /// refused at the callback until released, and only its own person
    /// releases it.
    #[tokio::test]
    async fn a_held_sign_in_finishes_only_once_released_for_its_person() {
        let tmp = tempfile::tempdir().unwrap();
        let vault = Vault::new(StoreKind::File, tmp.path());
        let whose = json!({"whose": {"server": "o", "url": "https://o.example/mcp",
            "owner": "oauth:https://idp.example#sub:ada", "redirectUri": "https://gw.example/oauth/callback",
            "clientId": "c", "held": true}});
        vault.keep_login_under_way("s-up", &whose).await.unwrap();
        let servers = |_: &str| None;
        let gateway_clients = |_: &str| None;
        let env = crate::paths::Environment::default();
        let configured = Configured {
            servers: &servers,
            gateway_clients: &gateway_clients,
            env: &env,
        };
        let back = "https://gw.example/oauth/callback?state=s-up&code=x";
        let held = finish(&vault, (back, None), &configured).await.unwrap_err();
        assert!(
            held.to_string()
                .contains("begins at your identity provider"),
            "{held}"
        );
        let address = "https://o.example/authorize?state=s-up";
        let bob = "oauth:https://idp.example#sub:bob";
        let bound = || digest("the-cookie");
        assert!(
            sign_in::release(&vault, address, (bob, bound()))
                .await
                .is_err()
        );
        let ada = "oauth:https://idp.example#sub:ada";
        sign_in::release(&vault, address, (ada, bound()))
            .await
            .unwrap();
        // Released for the browser that brings the cookie back alone.
        let name = super::super::finished::browser_cookie("s-up");
        for cookies in [
            None,
            Some(format!("{name}=another")),
            Some("x=the-cookie".into()),
        ] {
            let elsewhere = finish(&vault, (back, cookies.as_deref()), &configured).await;
            let said = elsewhere.unwrap_err().to_string();
            assert!(said.contains("only in the browser"), "{cookies:?}: {said}");
        }
        // That one goes on, to the server no longer configured here.
        let cookies = format!("a=b; {name}=the-cookie");
        let released = finish(&vault, (back, Some(&cookies)), &configured)
            .await
            .unwrap_err();
        assert!(released.to_string().contains("was changed"), "{released}");
    }
}

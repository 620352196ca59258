pub mod external_secret_deprecated_api;
pub mod external_secret_never_refreshes;
pub mod external_secret_policy_conflict;
pub mod secret_in_git;
pub mod secret_store_static_credentials;

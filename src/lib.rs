//! gitops-lint: an offline policy linter for GitOps repositories that Argo CD deploys from.
//!
//! The pipeline reads in one direction: [`discover`] → [`yaml`] (parse with spans) →
//! [`model`] (recognise objects) → [`render`] (kustomize, sources, ApplicationSets, the object
//! graph) → [`rules`] → [`config`] → [`engine`] → [`report`]. `tests/stages.rs` holds each
//! module's stage and checks that none names a later one.
#![forbid(unsafe_code)]

pub(crate) mod baseline;
pub(crate) mod cache;
pub mod cel;
pub mod changed;
pub mod cli;
pub mod config;
pub(crate) mod context;
pub mod discover;
pub mod engine;
pub mod escape;
pub(crate) mod finding;
pub mod fix;
pub(crate) mod glob;
pub(crate) mod goregex;
pub(crate) mod kinds;
pub mod model;
pub(crate) mod outcome;
pub(crate) mod paths;
pub mod policy;
pub(crate) mod reach;
pub(crate) mod redact;
pub mod render;
pub(crate) mod repo;
pub mod report;
pub mod rules;
pub mod schema;
pub(crate) mod scope;
pub mod source;
pub(crate) mod suppress;
pub(crate) mod text;
pub mod yaml;

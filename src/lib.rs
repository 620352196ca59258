//! gitops-lint: an offline policy linter for GitOps repositories that Argo CD deploys from.
//!
//! The pipeline reads in one direction: [`discover`] → [`yaml`] (parse with spans) →
//! [`model`] (recognise objects) → [`render`] (kustomize, sources, ApplicationSets, the object
//! graph) → [`rules`] → [`config`] → [`engine`] → [`report`]. `tests/stages.rs` holds each
//! module's stage and checks that none names a later one.
#![forbid(unsafe_code)]

pub mod baseline;
pub mod cache;
pub mod changed;
pub mod cli;
pub mod config;
pub mod context;
pub mod discover;
pub mod engine;
pub mod finding;
pub mod fix;
pub mod glob;
pub mod kinds;
pub mod model;
pub mod outcome;
pub mod paths;
pub mod reach;
pub mod redact;
pub mod render;
pub mod repo;
pub mod report;
pub mod rules;
pub mod schema;
pub mod scope;
pub mod source;
pub mod suppress;
pub mod text;
pub mod yaml;

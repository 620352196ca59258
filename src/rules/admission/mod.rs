//! Rules that run the cluster's own admission policies, as the repository defines them, on
//! what the repository renders.

pub mod admission_policy_violation;

pub(crate) use admission_policy_violation::selector_matches;

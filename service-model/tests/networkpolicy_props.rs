//! Properties of NetworkPolicy defaulting and validation on generated policies.

mod strategies;

use proptest::prelude::*;
use strategies::networkpolicy::{policy, valid_policy};
use svcnet_model::{NetworkPolicy, defaults, validation};

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Validation returns a list, whatever the input: create, update, and update against itself.
    #[test]
    fn validation_never_panics(new in policy(), old in policy()) {
        let _ = validation::validate_network_policy_create(&new);
        let _ = validation::validate_network_policy_update(&new, &old);
        let same = validation::validate_network_policy_update(&new, &new);
        // Against itself, every stored CIDR is exempt, so no CIDR syntax error can appear
        // that create would not also report.
        let create = validation::validate_network_policy_create(&new);
        for e in same.iter().filter(|e| e.field.contains("ipBlock")) {
            prop_assert!(create.iter().any(|c| c.field == e.field), "{e}");
        }
    }

    /// Defaulting twice is defaulting once, and never changes validity.
    #[test]
    fn defaulting_is_idempotent_and_keeps_validity(np in policy()) {
        let mut once = np.clone();
        defaults::default_network_policy(&mut once);
        let mut twice = once.clone();
        defaults::default_network_policy(&mut twice);
        prop_assert_eq!(&once, &twice);
        let before = validation::validate_network_policy_create(&np).is_empty();
        let after = validation::validate_network_policy_create(&once).is_empty();
        prop_assert_eq!(before, after);
        // The derived policy types are always present and valid.
        let types = once.spec.as_ref().and_then(|s| s.policy_types.clone()).unwrap_or_default();
        prop_assert!(!types.is_empty());
    }

    /// A valid policy is accepted, serializes to JSON and back unchanged, and stays valid, also
    /// once defaulted and as an update of itself.
    #[test]
    fn valid_policy_survives_serde_round_trip(np in valid_policy()) {
        let errs = validation::validate_network_policy_create(&np);
        prop_assert!(errs.is_empty(), "{:?}", errs);
        let json = serde_json::to_string(&np).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let back: NetworkPolicy = serde_json::from_str(&json).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(&back, &np);
        prop_assert!(validation::validate_network_policy_create(&back).is_empty());
        prop_assert!(validation::validate_network_policy_update(&back, &np).is_empty());
        let mut defaulted = back;
        defaults::default_network_policy(&mut defaulted);
        prop_assert!(validation::validate_network_policy_create(&defaulted).is_empty());
    }
}

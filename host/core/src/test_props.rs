//! The one proptest setting of the crate's property tests.

use proptest::prelude::ProptestConfig;

/// 256 cases, so that every property suite runs in well under a second in a
/// debug build; no regression files (failures are reported with their input).
pub(crate) fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 256,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

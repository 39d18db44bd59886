//! Every case of every area reads as its typed struct (the structs say every field the case
//! files hold: unknown fields are refused), and the loader finds them all.

use svcnet_test_support::case::{
    AllocExpect, DiscoveryExpect, RulesExpect, SliceExpect, TopologyExpect, TraceExpect, ValidateExpect,
    cases, raw_cases,
};

#[test]
fn every_area_reads_typed() {
    let counts = [
        ("allocators", cases::<AllocExpect>("allocators").len()),
        ("apiserver", cases::<ValidateExpect>("apiserver").len()),
        ("validation", cases::<ValidateExpect>("validation").len()),
        ("networkpolicy", cases::<ValidateExpect>("networkpolicy").len()),
        ("slicer", cases::<SliceExpect>("slicer").len()),
        ("topology", cases::<TopologyExpect>("topology").len()),
        ("discovery", cases::<DiscoveryExpect>("discovery").len()),
        ("trace", cases::<TraceExpect>("trace").len()),
        ("rules", cases::<RulesExpect>("rules").len()),
        ("rules-difftest", cases::<RulesExpect>("rules-difftest").len()),
    ];
    for (area, n) in counts {
        assert_eq!(n, raw_cases(area).len(), "{area}");
        assert!(n > 0, "{area} has no cases");
    }
}

#[test]
fn a_field_the_structs_do_not_know_is_refused() {
    let (_, mut v) = raw_cases("validation").remove(0);
    v["expect"]["surprise"] = serde_json::json!(1);
    assert!(serde_json::from_value::<svcnet_test_support::case::Case<ValidateExpect>>(v).is_err());
}

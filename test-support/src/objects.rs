//! A case's `input` (a `v1` `List`, or one object) as model objects, decoded by `kind` as the
//! CLI reads its input files.

use serde::de::DeserializeOwned;
use serde_json::Value;
use svcnet_model::{Object, ObjectSet};

/// The items of a `List` (or the one object given).
pub fn items(input: &Value) -> Vec<&Value> {
    let is_list = input["kind"].as_str().is_some_and(|k| k.ends_with("List")) && input.get("items").is_some();
    if is_list {
        input["items"].as_array().into_iter().flatten().collect()
    } else {
        vec![input]
    }
}

fn decode<T: DeserializeOwned>(v: &Value) -> Result<Box<T>, String> {
    let name = v["metadata"]["name"].as_str().unwrap_or("");
    serde_json::from_value(v.clone())
        .map(Box::new)
        .map_err(|e| format!("{} {name}: {e}", v["kind"].as_str().unwrap_or("?")))
}

/// One object by its `kind`; `Ok(None)` for a kind svcnet does not read (`Namespace`, ...).
pub fn object(v: &Value) -> Result<Option<Object>, String> {
    Ok(Some(match v["kind"].as_str().unwrap_or("") {
        "Service" => Object::Service(decode(v)?),
        "EndpointSlice" => Object::EndpointSlice(decode(v)?),
        "Endpoints" => Object::Endpoints(decode(v)?),
        "ServiceCIDR" => Object::ServiceCidr(decode(v)?),
        "IPAddress" => Object::IpAddress(decode(v)?),
        "Pod" => Object::Pod(decode(v)?),
        "Node" => Object::Node(decode(v)?),
        "NetworkPolicy" => Object::NetworkPolicy(decode(v)?),
        _ => return Ok(None),
    }))
}

/// Every object of `input` svcnet reads, in input order.
pub fn objects(input: &Value) -> Result<Vec<Object>, String> {
    let mut out = Vec::new();
    for v in items(input) {
        out.extend(object(v)?);
    }
    Ok(out)
}

/// The objects of `input`, sorted by kind.
pub fn object_set(input: &Value) -> Result<ObjectSet, String> {
    Ok(ObjectSet::sort(objects(input)?))
}

/// The names of the `Namespace` objects of `input`.
pub fn namespaces(input: &Value) -> Vec<String> {
    items(input)
        .into_iter()
        .filter(|v| v["kind"] == "Namespace")
        .filter_map(|v| v["metadata"]["name"].as_str().map(str::to_owned))
        .collect()
}

/// A value decoded from JSON, panicking with the error: for fixtures written inline in tests.
pub fn from_json<T: DeserializeOwned>(v: Value) -> T {
    serde_json::from_value(v).unwrap_or_else(|e| panic!("fixture JSON: {e}"))
}

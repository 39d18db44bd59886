//! `ValidateObjectMeta` / `ValidateObjectMetaUpdate` and the label and annotation rules every
//! kind shares (apimachinery's `objectmeta.go`, with core's extra finalizer-name check).

use crate::field::{BadValue, ErrorList, FieldError, Path, go_quote};
use crate::validation::fieldpath::FieldPath;
use crate::validation::names;
use crate::{ObjectMeta, OwnerReference, StringMap};

/// A name check (`ValidateNameFunc`): `prefix` is true when checking a `generateName`.
pub(crate) type NameFn = fn(&str, bool) -> Vec<String>;

/// `TotalAnnotationSizeLimitB`: the summed byte length of annotation keys and values.
pub(crate) const TOTAL_ANNOTATION_SIZE_LIMIT_B: usize = 256 * (1 << 10);

/// The root of every object's metadata paths.
pub(crate) const METADATA: FieldPath<'static> = FieldPath::Root("metadata");

/// `FieldImmutableErrorMsg`.
pub(crate) const FIELD_IMMUTABLE: &str = "field is immutable";

/// Finalizer names that need no domain prefix (`IsStandardFinalizerName`).
const STANDARD_FINALIZERS: &[&str] = &["kubernetes", "orphan", "foregroundDeletion"];

/// `ValidateObjectMeta` for a create: name (or generateName) through `name_fn`, namespace
/// (required for namespaced kinds, forbidden otherwise), generation, labels, annotations,
/// owner references and finalizers.
pub(crate) fn validate_object_meta(
    meta: &ObjectMeta,
    requires_namespace: bool,
    name_fn: NameFn,
    path: &FieldPath<'_>,
) -> ErrorList {
    let mut errs = Vec::new();
    let generate_name = meta.generate_name.as_deref().unwrap_or("");
    if !generate_name.is_empty() {
        for msg in name_fn(generate_name, true) {
            errs.push(FieldError::invalid(
                &path.child("generateName").path(),
                generate_name,
                msg,
            ));
        }
    }
    let name = meta.name();
    if name.is_empty() {
        // svcnet does not generate names: a generateName alone stands for the name to come.
        if generate_name.is_empty() {
            errs.push(FieldError::required(
                &path.child("name").path(),
                "name or generateName is required",
            ));
        }
    } else {
        for msg in name_fn(name, false) {
            errs.push(FieldError::invalid(&path.child("name").path(), name, msg));
        }
    }
    let ns = meta.namespace();
    if requires_namespace {
        if ns.is_empty() {
            errs.push(FieldError::required(&path.child("namespace").path(), ""));
        } else {
            for msg in names::validate_namespace_name(ns, false) {
                errs.push(FieldError::invalid(&path.child("namespace").path(), ns, msg));
            }
        }
    } else if !ns.is_empty() {
        errs.push(FieldError::forbidden(
            &path.child("namespace").path(),
            "not allowed on this type",
        ));
    }
    if let Some(g) = meta.generation.filter(|g| *g < 0) {
        errs.push(FieldError::invalid(
            &path.child("generation").path(),
            g,
            "must be greater than or equal to 0",
        ));
    }
    labels_into(&mut errs, meta.labels.as_ref(), &path.child("labels"));
    annotations_into(&mut errs, meta.annotations.as_ref(), &path.child("annotations"));
    owner_references_into(
        &mut errs,
        meta.owner_references.as_deref().unwrap_or(&[]),
        &path.child("ownerReferences"),
    );
    let finalizers = meta.finalizers.as_deref().unwrap_or(&[]);
    let fpath = path.child("finalizers");
    finalizers_into(&mut errs, finalizers, &fpath);
    kube_finalizer_names_into(&mut errs, finalizers, &fpath);
    errs
}

/// `ValidateObjectMetaUpdate`: identity and timestamps are immutable, `resourceVersion` is
/// required, `generation` may not go back, no finalizer may be added while deleting; labels,
/// annotations and owner references are validated again.
pub(crate) fn validate_object_meta_update(
    new: &ObjectMeta,
    old: &ObjectMeta,
    path: &FieldPath<'_>,
) -> ErrorList {
    let mut errs = Vec::new();
    let new_finalizers = new.finalizers.as_deref().unwrap_or(&[]);
    if old.deletion_timestamp.is_some() {
        let old_finalizers = old.finalizers.as_deref().unwrap_or(&[]);
        let mut extra: Vec<&String> = new_finalizers
            .iter()
            .filter(|f| !old_finalizers.contains(f))
            .collect();
        extra.sort();
        extra.dedup();
        if !extra.is_empty() {
            errs.push(FieldError::forbidden(
                &path.child("finalizers").path(),
                format!(
                    "no new finalizers can be added if the object is being deleted, found new finalizers {}",
                    go_string_slice(extra.iter().map(|s| s.as_str()))
                ),
            ));
        }
    }
    let rv = new.resource_version.as_deref().unwrap_or("");
    if rv.is_empty() {
        errs.push(FieldError::invalid(
            &path.child("resourceVersion").path(),
            rv,
            "must be specified for an update",
        ));
    }
    let (ng, og) = (new.generation.unwrap_or(0), old.generation.unwrap_or(0));
    if ng < og {
        errs.push(FieldError::invalid(
            &path.child("generation").path(),
            ng,
            "must not be decremented",
        ));
    }
    immutable_str(&mut errs, new.name(), old.name(), &path.child("name"));
    immutable_str(
        &mut errs,
        new.namespace(),
        old.namespace(),
        &path.child("namespace"),
    );
    immutable_str(
        &mut errs,
        new.uid.as_deref().unwrap_or(""),
        old.uid.as_deref().unwrap_or(""),
        &path.child("uid"),
    );
    if new.creation_timestamp != old.creation_timestamp {
        errs.push(FieldError::invalid(
            &path.child("creationTimestamp").path(),
            opt_raw(new.creation_timestamp.as_deref()),
            FIELD_IMMUTABLE,
        ));
    }
    if new.deletion_timestamp != old.deletion_timestamp {
        errs.push(FieldError::invalid(
            &path.child("deletionTimestamp").path(),
            opt_raw(new.deletion_timestamp.as_deref()),
            FIELD_IMMUTABLE,
        ));
    }
    if new.deletion_grace_period_seconds != old.deletion_grace_period_seconds {
        let v = new
            .deletion_grace_period_seconds
            .map_or(BadValue::Null, BadValue::Int);
        errs.push(FieldError::invalid(
            &path.child("deletionGracePeriodSeconds").path(),
            v,
            FIELD_IMMUTABLE,
        ));
    }
    labels_into(&mut errs, new.labels.as_ref(), &path.child("labels"));
    annotations_into(&mut errs, new.annotations.as_ref(), &path.child("annotations"));
    owner_references_into(
        &mut errs,
        new.owner_references.as_deref().unwrap_or(&[]),
        &path.child("ownerReferences"),
    );
    kube_finalizer_names_into(&mut errs, new_finalizers, &path.child("finalizers"));
    errs
}

fn opt_raw(v: Option<&str>) -> BadValue {
    v.map_or(BadValue::Null, |s| BadValue::Raw(s.to_owned()))
}

fn immutable_str(errs: &mut ErrorList, new: &str, old: &str, path: &FieldPath<'_>) {
    if new != old {
        errs.push(FieldError::invalid(&path.path(), new, FIELD_IMMUTABLE));
    }
}

/// `ValidateImmutableField` for any comparable value, reporting `bad` as the new value.
pub(crate) fn validate_immutable_field<T: PartialEq>(
    new: &T,
    old: &T,
    bad: impl FnOnce() -> BadValue,
    path: &Path,
) -> ErrorList {
    if new == old {
        Vec::new()
    } else {
        vec![FieldError::invalid(path, bad(), FIELD_IMMUTABLE)]
    }
}

/// `ValidateLabelName`: a qualified name.
pub(crate) fn validate_label_name(key: &str, path: &Path) -> ErrorList {
    let mut errs = Vec::new();
    label_name_into(&mut errs, key, &FieldPath::from(path));
    errs
}

/// [`validate_label_name`] into `errs`.
fn label_name_into(errs: &mut ErrorList, key: &str, path: &FieldPath<'_>) {
    for msg in names::is_qualified_name(key) {
        errs.push(FieldError::invalid(&path.path(), key, msg));
    }
}

/// `ValidateLabels`: every key a qualified name, every value a label value; errors at `path`.
pub(crate) fn validate_labels(labels: Option<&StringMap>, path: &Path) -> ErrorList {
    let mut errs = Vec::new();
    labels_into(&mut errs, labels, &FieldPath::from(path));
    errs
}

/// [`validate_labels`] into `errs`.
pub(crate) fn labels_into(errs: &mut ErrorList, labels: Option<&StringMap>, path: &FieldPath<'_>) {
    for (k, v) in labels.into_iter().flatten() {
        label_name_into(errs, k, path);
        for msg in names::is_valid_label_value(v) {
            errs.push(FieldError::invalid(&path.path(), v, msg));
        }
    }
}

/// `ValidateAnnotations`: keys are qualified names (case-insensitively) and the keys and values
/// together hold at most 256 KiB.
fn annotations_into(errs: &mut ErrorList, annotations: Option<&StringMap>, path: &FieldPath<'_>) {
    let mut total: usize = 0;
    for (k, v) in annotations.into_iter().flatten() {
        let key = if k.bytes().any(|b| b.is_ascii_uppercase() || !b.is_ascii()) {
            std::borrow::Cow::Owned(k.to_lowercase())
        } else {
            std::borrow::Cow::Borrowed(k.as_str())
        };
        for msg in names::is_qualified_name(&key) {
            errs.push(FieldError::invalid(&path.path(), k, msg));
        }
        total = total.saturating_add(k.len()).saturating_add(v.len());
    }
    if total > TOTAL_ANNOTATION_SIZE_LIMIT_B {
        errs.push(FieldError::too_long(
            &path.path(),
            "",
            TOTAL_ANNOTATION_SIZE_LIMIT_B,
        ));
    }
}

/// The group and version of an owner reference, as `schema.FromAPIVersionAndKind` reads
/// them (an `apiVersion` with more than one `/` yields no group and no version).
fn owner_gv(r: &OwnerReference) -> (&str, &str) {
    let av = r.api_version.as_str();
    match av.split_once('/') {
        None => ("", av),
        Some((g, v)) if !v.contains('/') => (g, v),
        Some(_) => ("", ""),
    }
}

/// `ValidateOwnerReferences`: each reference needs apiVersion (a version), kind, name and uid;
/// `v1 Event` may not own; at most one reference may be the controller.
fn owner_references_into(errs: &mut ErrorList, refs: &[OwnerReference], path: &FieldPath<'_>) {
    let mut first_controller: Option<&OwnerReference> = None;
    for r in refs {
        let (group, version) = owner_gv(r);
        if version.is_empty() {
            errs.push(FieldError::invalid(
                &path.child("apiVersion").path(),
                &r.api_version,
                "version must not be empty",
            ));
        }
        if r.kind.is_empty() {
            errs.push(FieldError::invalid(
                &path.child("kind").path(),
                &r.kind,
                "must not be empty",
            ));
        }
        if r.name.is_empty() {
            errs.push(FieldError::invalid(
                &path.child("name").path(),
                &r.name,
                "must not be empty",
            ));
        }
        if r.uid.is_empty() {
            errs.push(FieldError::invalid(
                &path.child("uid").path(),
                &r.uid,
                "must not be empty",
            ));
        }
        if group.is_empty() && version == "v1" && r.kind == "Event" {
            errs.push(FieldError::invalid(
                &path.path(),
                BadValue::Raw(go_owner_reference(r)),
                "/v1, Kind=Event is disallowed from being an owner",
            ));
        }
        if r.controller == Some(true) {
            match first_controller {
                Some(first) => errs.push(FieldError::invalid(
                    &path.path(),
                    BadValue::Raw(format!(
                        "[]v1.OwnerReference{{{}}}",
                        refs.iter().map(go_owner_reference).collect::<Vec<_>>().join(", ")
                    )),
                    format!(
                        "Only one reference can have Controller set to true. Found \"true\" in references for {}/{} and {}/{}",
                        first.kind, first.name, r.kind, r.name
                    ),
                )),
                None => first_controller = Some(r),
            }
        }
    }
}

/// `ValidateOwnerReferences` at a built path.
#[cfg(test)]
fn validate_owner_references(refs: &[OwnerReference], path: &Path) -> ErrorList {
    let mut errs = Vec::new();
    owner_references_into(&mut errs, refs, &FieldPath::from(path));
    errs
}

/// `ValidateFinalizers`: each name a qualified name; `orphan` and `foregroundDeletion` exclude
/// each other.
fn finalizers_into(errs: &mut ErrorList, finalizers: &[String], path: &FieldPath<'_>) {
    for f in finalizers {
        for msg in names::is_qualified_name(f) {
            errs.push(FieldError::invalid(&path.path(), f, msg));
        }
    }
    let has = |n: &str| finalizers.iter().any(|f| f == n);
    if has("orphan") && has("foregroundDeletion") {
        errs.push(FieldError::invalid(
            &path.path(),
            BadValue::Raw(go_string_slice(finalizers.iter().map(String::as_str))),
            "finalizer orphan and foregroundDeletion cannot be both set",
        ));
    }
}

/// Core's extra finalizer check: a name without a `/` must be a standard finalizer name.
fn kube_finalizer_names_into(errs: &mut ErrorList, finalizers: &[String], path: &FieldPath<'_>) {
    for (i, f) in finalizers.iter().enumerate() {
        let p = path.index(i);
        for msg in names::is_qualified_name(f) {
            errs.push(FieldError::invalid(&p.path(), f, msg));
        }
        if !f.contains('/') && !STANDARD_FINALIZERS.contains(&f.as_str()) {
            errs.push(FieldError::invalid(
                &p.path(),
                f,
                "name is neither a standard finalizer name nor is it fully qualified",
            ));
        }
    }
}

/// Go's `%#v` of an owner reference.
fn go_owner_reference(r: &OwnerReference) -> String {
    let b = |v: Option<bool>| v.map_or("(*bool)(nil)".to_owned(), |v| format!("(*bool)({v})"));
    format!(
        "v1.OwnerReference{{APIVersion:{}, Kind:{}, Name:{}, UID:{}, Controller:{}, BlockOwnerDeletion:{}}}",
        go_quote(&r.api_version),
        go_quote(&r.kind),
        go_quote(&r.name),
        go_quote(&r.uid),
        b(r.controller),
        b(r.block_owner_deletion)
    )
}

/// Go's `%#v` of a `[]string`.
fn go_string_slice<'a>(items: impl Iterator<Item = &'a str>) -> String {
    let quoted: Vec<String> = items.map(go_quote).collect();
    format!("[]string{{{}}}", quoted.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(name: &str, ns: &str) -> ObjectMeta {
        ObjectMeta {
            name: Some(name.into()),
            namespace: Some(ns.into()),
            resource_version: Some("1".into()),
            ..Default::default()
        }
    }

    #[test]
    fn create_rules() {
        let p = FieldPath::Root("metadata");
        assert!(
            validate_object_meta(&meta("web", "shop"), true, names::name_is_dns1035_label, &p).is_empty()
        );
        let e = validate_object_meta(&meta("", ""), true, names::name_is_dns1035_label, &p);
        assert_eq!(e.len(), 2);
        assert_eq!(
            e[0].to_string(),
            "metadata.name: Required value: name or generateName is required"
        );
        let e = validate_object_meta(&meta("web", "shop"), false, names::name_is_dns_subdomain, &p);
        assert_eq!(e.len(), 1);
        assert_eq!(e[0].field, "metadata.namespace");
        let mut m = meta("1web", "shop");
        m.labels = Some([("a/b/c".to_string(), "-".to_string())].into());
        m.annotations = Some(
            [(
                "Example.com/X".to_string(),
                "v".repeat(TOTAL_ANNOTATION_SIZE_LIMIT_B),
            )]
            .into(),
        );
        m.finalizers = Some(vec![
            "orphan".into(),
            "foregroundDeletion".into(),
            "custom".into(),
        ]);
        m.generation = Some(-1);
        let e = validate_object_meta(&m, true, names::name_is_dns1035_label, &p);
        let fields: Vec<&str> = e.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(
            fields,
            [
                "metadata.name",
                "metadata.generation",
                "metadata.labels",
                "metadata.labels",
                "metadata.annotations",
                "metadata.finalizers",
                "metadata.finalizers[2]"
            ]
        );
        assert_eq!(
            e[4].to_string(),
            "metadata.annotations: Too long: may not be more than 262144 bytes"
        );
    }

    #[test]
    fn update_rules() {
        let p = FieldPath::Root("metadata");
        let old = meta("a", "ns");
        let mut new = meta("b", "ns");
        new.resource_version = None;
        let e = validate_object_meta_update(&new, &old, &p);
        let fields: Vec<&str> = e.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(fields, ["metadata.resourceVersion", "metadata.name"]);
        assert_eq!(
            e[1].to_string(),
            "metadata.name: Invalid value: \"b\": field is immutable"
        );
        let mut deleting = meta("a", "ns");
        deleting.deletion_timestamp = Some("2024-01-01T00:00:00Z".into());
        let mut new = deleting.clone();
        new.finalizers = Some(vec!["example.com/x".into()]);
        let e = validate_object_meta_update(&new, &deleting, &p);
        assert_eq!(e.len(), 1);
        assert_eq!(e[0].type_, crate::field::ErrorType::Forbidden);
    }

    #[test]
    fn owner_references() {
        let p = Path::new("metadata").child("ownerReferences");
        let ok = OwnerReference {
            api_version: "apps/v1".into(),
            kind: "ReplicaSet".into(),
            name: "rs".into(),
            uid: "1".into(),
            controller: Some(true),
            ..Default::default()
        };
        assert!(validate_owner_references(std::slice::from_ref(&ok), &p).is_empty());
        assert_eq!(validate_owner_references(&[ok.clone(), ok.clone()], &p).len(), 1);
        let event = OwnerReference {
            api_version: "v1".into(),
            kind: "Event".into(),
            ..ok.clone()
        };
        assert_eq!(validate_owner_references(&[event], &p).len(), 1);
        assert_eq!(
            validate_owner_references(&[OwnerReference::default()], &p).len(),
            4
        );
    }
}

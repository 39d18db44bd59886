//! The name and value syntaxes of `k8s.io/apimachinery/pkg/util/validation`.

//! Pods to endpoints to EndpointSlices with Kubernetes' minimal-churn reconciler and mirroring.

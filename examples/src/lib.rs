//! Runnable examples of svcnet; see the `examples` targets of this package.

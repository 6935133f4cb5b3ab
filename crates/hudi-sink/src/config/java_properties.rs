//! Java `.properties` syntax as read by `java.util.Properties.load` and written without escapes.

output "writer_function_name" {
  description = "Writer function name."
  value       = module.sink.writer_function_name
}

output "coordinator_function_name" {
  description = "Coordinator function name."
  value       = module.sink.coordinator_function_name
}

output "event_source_mapping_id" {
  description = "UUID of the writer's event source mapping."
  value       = module.sink.event_source_mapping_id
}

output "base_path" {
  description = "Table base path."
  value       = module.sink.base_path
}

output "deployment_properties" {
  description = "Lines to append to the table properties file at table_properties_uri."
  value       = module.sink.deployment_properties
}

output "dashboard_name" {
  description = "CloudWatch dashboard of the sink."
  value       = module.sink.dashboard_name
}

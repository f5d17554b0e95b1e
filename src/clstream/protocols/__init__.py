"""Protocol runners: they drive systems through streams and write tidy records to the store."""

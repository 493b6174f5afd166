# The Prometheus rules rpmem-tools ships (packaging/prometheus/rpmem.rules.yml) and the metrics
# they read, with Debian's promtool and prometheus-node-exporter and the files real writers
# (stock libpmemobj through our librpmem.so.1, the private sshd, rpmemd) write.
rpmem_add_catch_test(integration_rules
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/rules_test.cpp
  LIBS rpmem_client rpmem_test_sshd rpmem_test_fault
  LABELS integration)
add_dependencies(integration_rules rpmem rpmemd rpmem_pmemobj_log)

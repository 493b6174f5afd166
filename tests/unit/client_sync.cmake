# The sync protocol (lib/client/replica_sync: apply_sync) against a recording destination, and
# the block comparison (lib/client/block_diff: diff_sums). rpmem_client loads libfabric only at
# its first fabric call, which these tests never make.
rpmem_add_catch_test(unit_client_replica_sync
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/client_replica_sync_test.cpp LIBS rpmem_client LABELS unit)
rpmem_add_catch_test(unit_client_dirty_map
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/client_dirty_map_test.cpp LIBS rpmem_client_core
  Threads::Threads LABELS unit)

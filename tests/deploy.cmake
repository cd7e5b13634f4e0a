# Observability and deployment: the Prometheus endpoint scraped by a real
# Prometheus, the Grafana dashboard's queries, the Kubernetes manifests
# rendered with kustomize and their pods' command lines run on network-
# namespace "nodes". Each SKIPs (77, one line why) where a tool is missing,
# and FAILs instead under CI (CI=true): .ci/run installs them all.
find_program(SYM_PYTHON3 python3)
if(NOT TARGET symtrain_cli OR NOT SYM_PYTHON3)
  return()
endif()
set(SYM_OBS_ENV "SYM_HAVE_MHD=${SYM_HAVE_MHD}")
add_test(NAME obs_prometheus COMMAND ${SYM_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/obs_prometheus.py
         scrape $<TARGET_FILE:symrun> $<TARGET_FILE:symtrain_cli>)
add_test(NAME obs_metrics_port COMMAND ${SYM_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/obs_prometheus.py
         port-taken $<TARGET_FILE:symtrain_cli>)
add_test(NAME obs_dashboard COMMAND ${SYM_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/obs_prometheus.py
         names $<TARGET_FILE:symrun> $<TARGET_FILE:symtrain_cli>
         ${PROJECT_SOURCE_DIR}/deploy/grafana/symtrain.json)
set_tests_properties(obs_prometheus obs_metrics_port obs_dashboard PROPERTIES TIMEOUT 120
  SKIP_RETURN_CODE 77 ENVIRONMENT "${SYM_OBS_ENV}")

add_test(NAME deploy_cpu_limit COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/deploy_cpu_limit.sh
         $<TARGET_FILE:symtrain_cli>)
set_tests_properties(deploy_cpu_limit PROPERTIES TIMEOUT 60 SKIP_RETURN_CODE 77)

add_test(NAME deploy_k8s COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/deploy_k8s.sh
         $<TARGET_FILE:symtrain_cli> ${PROJECT_SOURCE_DIR})
set_tests_properties(deploy_k8s PROPERTIES TIMEOUT 200 SKIP_RETURN_CODE 77)

# The endpoint's contract over HTTP (links libsymtrain's objects: sym__prom_* is private).
sym_unit_test(obs_prom SOURCES $<TARGET_OBJECTS:symtrain>
  LIBS symshmem $<TARGET_PROPERTY:symtrain,LINK_LIBRARIES>)

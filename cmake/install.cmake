# The install tree, its mirror in the build tree, and the Debian package.
#
# `cmake --install build --prefix PREFIX` lays tune out as tuner/base/install_layout.h describes:
# PREFIX/bin/{tune,tune-keeper,tune-kernel-check,tune-trainer}, PREFIX/lib/tune/libtune_trainer_gpu.so (when built),
# PREFIX/share/tune/{studies/*.yaml,chart.min.js}. Every file is found from the running binary, so
# the prefix may be mounted anywhere (a shared folder on every node). The build tree holds the
# same share/tune next to build/bin, so `build/bin/tune --trials 50 quickstart` works there too.
#
# `cpack -G DEB` (in build/) makes tune_<version>_<arch>.deb, whose Depends are what the binaries
# load (dpkg-shlibdeps) plus mpirun; the GPU plugin, when built, is a package of its own
# (tune-gpu) so that the main one never depends on CUDA.
include(GNUInstallDirs)

set(tune_share_dir ${CMAKE_INSTALL_DATADIR}/tune)
# Not CMAKE_INSTALL_LIBDIR: on Debian that is lib/<multiarch>, and the trainer looks for its
# plugin at a fixed place relative to itself (trainer/device.cpp: bin/../lib/tune).
set(tune_plugin_dir lib/tune)

# Chart.js: a copy goes with tune, so the HTML report works on nodes without libjs-chart.js.
find_file(TUNE_CHARTJS_FILE NAMES chart.min.js chart.js PATHS /usr/share/javascript/chart.js
  NO_DEFAULT_PATH)
if(NOT TUNE_CHARTJS_FILE)
  message(STATUS "Chart.js not found (libjs-chart.js): the install carries none; "
    "`tune report --format html` then needs libjs-chart.js or TUNE_CHARTJS where it runs")
endif()

# The build tree's share/tune: copies made at configure time, refreshed when a source changes.
file(GLOB tune_ready_studies CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/studies/*.yaml)
foreach(study IN LISTS tune_ready_studies)
  get_filename_component(study_name ${study} NAME)
  configure_file(${study} ${CMAKE_BINARY_DIR}/share/tune/studies/${study_name} COPYONLY)
endforeach()
if(TUNE_CHARTJS_FILE)
  configure_file(${TUNE_CHARTJS_FILE} ${CMAKE_BINARY_DIR}/share/tune/chart.min.js COPYONLY)
endif()

if(TARGET tune)
  install(TARGETS tune tune-keeper tune-kernel-check RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT runtime)
  install(TARGETS tune_threads tune_getenv LIBRARY DESTINATION ${tune_plugin_dir} COMPONENT runtime)
  install(FILES ${tune_ready_studies} DESTINATION ${tune_share_dir}/studies COMPONENT runtime)
  if(TUNE_CHARTJS_FILE)
    install(FILES ${TUNE_CHARTJS_FILE} DESTINATION ${tune_share_dir} RENAME chart.min.js
      COMPONENT runtime)
  endif()
endif()
if(TARGET tune-trainer)
  install(TARGETS tune-trainer RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT runtime)
endif()
set(tune_components runtime)
if(TARGET tune_trainer_gpu)
  # CUDA's libraries often live outside the loader's default path (/usr/local/cuda/lib64): the
  # installed plugin keeps the link-time folders of its dependencies as its RUNPATH.
  set_target_properties(tune_trainer_gpu PROPERTIES INSTALL_RPATH_USE_LINK_PATH TRUE)
  install(TARGETS tune_trainer_gpu LIBRARY DESTINATION ${tune_plugin_dir} COMPONENT gpu)
  list(APPEND tune_components gpu)
endif()

# cpack (and `make install`) installs what was built, without first building every target, tests
# and benchmarks included: build tune, tune-keeper and tune-trainer (scripts/build.sh) first.
set(CMAKE_SKIP_INSTALL_ALL_DEPENDENCY ON)
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME tune)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "tune maintainers <tune@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
  "auto-tuning of thread, binding and allreduce settings for distributed training")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_COMPONENTS_ALL ${tune_components})
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME tune)
# mpirun launches trials; the rest of the runtime set (scripts/install-deps.sh runtime) is what
# the binaries load, which dpkg-shlibdeps finds. The quickstart study reads Fashion-MNIST.
set(CPACK_DEBIAN_RUNTIME_PACKAGE_DEPENDS openmpi-bin)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_RECOMMENDS dataset-fashion-mnist)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SUGGESTS "slurm-client, python3-optuna")
set(CPACK_DEBIAN_GPU_PACKAGE_NAME tune-gpu)
set(CPACK_DEBIAN_GPU_PACKAGE_DEPENDS "tune (= ${PROJECT_VERSION})")
# CUDA and NCCL often come from NVIDIA's installers, which dpkg-shlibdeps cannot map to packages.
set(CPACK_DEBIAN_GPU_PACKAGE_SHLIBDEPS OFF)
include(CPack)

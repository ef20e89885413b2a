# The knob catalog (probes/knobs.yaml) and what is built from it, defined before the modules
# because two of them read it: tune::probes links the catalog's reader, and the trainer, which may
# link neither probes/ nor yaml-cpp, includes a header of its flag defaults generated from it.
#
#   tune_knob_catalog      static library: probes/knob_catalog.cpp with the YAML embedded (a
#                          header made by cmake/embed_text.cmake), so no installed binary needs
#                          the file at run time
#   tune-knob-defaults     the generator of that header (probes/knob_defaults_main.cpp)
#   tune_trainer_knobs     INTERFACE target carrying the generated header
#                          ${CMAKE_BINARY_DIR}/knobs/trainer/knob_defaults.h, included as
#                          "trainer/knob_defaults.h"
find_package(yaml-cpp REQUIRED)

set(tune_knobs_dir ${CMAKE_BINARY_DIR}/knobs)
set(tune_knobs_yaml ${PROJECT_SOURCE_DIR}/probes/knobs.yaml)
add_custom_command(OUTPUT ${tune_knobs_dir}/embedded/knobs_yaml.h
  COMMAND ${CMAKE_COMMAND} -DINPUT=${tune_knobs_yaml} -DOUTPUT=${tune_knobs_dir}/embedded/knobs_yaml.h
    -DNAME=k_knobs_yaml -P ${PROJECT_SOURCE_DIR}/cmake/embed_text.cmake
  DEPENDS ${tune_knobs_yaml} ${PROJECT_SOURCE_DIR}/cmake/embed_text.cmake
  COMMENT "Embedding probes/knobs.yaml" VERBATIM)

add_library(tune_knob_catalog STATIC ${PROJECT_SOURCE_DIR}/probes/knob_catalog.cpp
  ${tune_knobs_dir}/embedded/knobs_yaml.h)
target_include_directories(tune_knob_catalog PUBLIC ${PROJECT_SOURCE_DIR}
  PRIVATE ${tune_knobs_dir})
target_link_libraries(tune_knob_catalog PUBLIC nlohmann_json::nlohmann_json PRIVATE yaml-cpp)
# PIC: the trainer's CUDA plugin is a shared object, and a static archive may end up in one.
set_target_properties(tune_knob_catalog PROPERTIES POSITION_INDEPENDENT_CODE ON)

add_executable(tune-knob-defaults ${PROJECT_SOURCE_DIR}/probes/knob_defaults_main.cpp)
target_link_libraries(tune-knob-defaults PRIVATE tune_knob_catalog)
# A build tool, not part of the product: kept out of bin/ (and so out of the install).
set_target_properties(tune-knob-defaults PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${tune_knobs_dir})

add_custom_command(OUTPUT ${tune_knobs_dir}/trainer/knob_defaults.h
  COMMAND ${CMAKE_COMMAND} -E make_directory ${tune_knobs_dir}/trainer
  COMMAND tune-knob-defaults ${tune_knobs_dir}/trainer/knob_defaults.h
  DEPENDS tune-knob-defaults
  COMMENT "Generating the trainer's flag defaults from the knob catalog" VERBATIM)
add_custom_target(tune_trainer_knob_header DEPENDS ${tune_knobs_dir}/trainer/knob_defaults.h)
add_library(tune_trainer_knobs INTERFACE)
target_include_directories(tune_trainer_knobs INTERFACE ${tune_knobs_dir})
add_dependencies(tune_trainer_knobs tune_trainer_knob_header)

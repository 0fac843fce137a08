"""The pytest plugin: options, markers, fixtures, parametrisation, the report hook, and the controller-side
session that gathers one record per case from every process."""

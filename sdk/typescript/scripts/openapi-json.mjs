// Prints the OpenAPI document (YAML, the path given) as JSON, for the
// Python SDK's generator (sdk/python/gen.py), which has only the standard
// library and so no YAML parser.
import { readFileSync } from "node:fs";
import yaml from "js-yaml";

process.stdout.write(JSON.stringify(yaml.load(readFileSync(process.argv[2], "utf8"))));

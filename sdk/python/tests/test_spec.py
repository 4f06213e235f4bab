import unittest

import idlegrid
from idlegrid._proto import pb
from idlegrid.spec import item_values, map_spec, spec_from

IMAGE = "sim@sha256:" + "ab" * 32


class ItemValuesTest(unittest.TestCase):
    def test_scalars_become_the_strings_a_manifest_would_give(self):
        self.assertEqual(item_values(0, {"seed": 7, "lr": 0.5, "tag": "a b", "on": True, "off": False}),
                         {"seed": "7", "lr": "0.5", "tag": "a b", "on": "true", "off": "false"})

    def test_a_value_the_wire_cannot_carry_names_the_item(self):
        for bad in ({"seed": [1]}, {"seed": None}, {"seed": {"x": 1}}):
            with self.assertRaises(idlegrid.InvalidArgument) as e:
                map_spec(IMAGE, [{"seed": 1}, {"seed": 2}, bad], ["{{.seed}}"])
            self.assertIn("array.items[2]", e.exception.reason)
            self.assertIn("'seed'", e.exception.reason)
            self.assertEqual(e.exception.item_index, 2)

    def test_an_item_that_is_not_a_dict_names_the_item(self):
        with self.assertRaises(idlegrid.InvalidArgument) as e:
            map_spec(IMAGE, [{"seed": 1}, 5], ["{{.seed}}"])
        self.assertEqual(e.exception.item_index, 1)


class MapSpecTest(unittest.TestCase):
    def test_one_task_per_item_with_the_values_and_resources_given(self):
        spec = map_spec(IMAGE, ({"seed": s} for s in range(3)), ["--seed", "{{.seed}}", 4], gpus=1,
                        cpu=2, memory=512 * idlegrid.MiB, env={"RUN": "r-{{.seed}}"}, name="sweep", retries=2)
        self.assertEqual(spec.api_version, "idlegrid/v1")
        self.assertEqual(spec.array_count, 3)
        self.assertEqual([dict(i.values) for i in spec.items], [{"seed": "0"}, {"seed": "1"}, {"seed": "2"}])
        self.assertEqual(list(spec.args), ["--seed", "{{.seed}}", "4"])
        self.assertEqual(dict(spec.env), {"RUN": "r-{{.seed}}"})
        self.assertEqual((spec.resources.gpus, spec.resources.cpu, spec.resources.memory_bytes), (1, 2.0, 512 << 20))
        self.assertEqual((spec.name, spec.retries, spec.output_path), ("sweep", 2, "/out"))

    def test_other_fields_by_their_proto_names(self):
        spec = map_spec(IMAGE, [{}], max_cost=2.5, constraints={"gpu_models": ["H100"]},
                        inputs={"/in/params.json": "sha256:" + "cd" * 32})
        self.assertEqual(spec.max_cost, 2.5)
        self.assertEqual(list(spec.constraints.gpu_models), ["H100"])
        self.assertEqual((spec.inputs[0].path, spec.inputs[0].artifact), ("/in/params.json", "sha256:" + "cd" * 32))

    def test_a_job_budget_is_split_into_each_tasks_cost_cap(self):
        spec = map_spec(IMAGE, [{"seed": s} for s in range(4)], budget=10, run_timeout=60)
        self.assertEqual(spec.max_cost, 2.5)
        self.assertEqual(spec.max_cost * spec.array_count, 10)
        with self.assertRaisesRegex(idlegrid.InvalidArgument, "not both"):
            map_spec(IMAGE, [{}], budget=1, max_cost=1)
        for bad in (0, -1, "5", True):
            with self.assertRaisesRegex(idlegrid.InvalidArgument, "budget: a positive number"):
                map_spec(IMAGE, [{}], budget=bad)

    def test_an_unknown_field_is_refused(self):
        with self.assertRaises(idlegrid.InvalidArgument) as e:
            map_spec(IMAGE, [{}], memroy=1)
        self.assertIn("memroy", e.exception.reason)

    def test_no_items_is_refused(self):
        with self.assertRaises(idlegrid.InvalidArgument):
            map_spec(IMAGE, [], ["x"])

    def test_a_spec_from_a_json_mapping_dict(self):
        spec = spec_from({"name": "hello", "image": IMAGE, "resources": {"memoryBytes": "1048576"},
                          "items": [{"values": {"seed": "1"}}], "arrayCount": 1})
        self.assertEqual((spec.api_version, spec.resources.memory_bytes, spec.items[0].values["seed"]),
                         ("idlegrid/v1", 1 << 20, "1"))
        self.assertIs(spec_from(spec), spec)
        with self.assertRaises(idlegrid.InvalidArgument):
            spec_from({"nmae": "x"})
        self.assertIsInstance(spec, pb.JobSpec)


if __name__ == "__main__":
    unittest.main()

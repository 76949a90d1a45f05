"""Leave entitlement as an executable knowledge graph (RelationalAI semantics DSL): a domain pack of
verifybench's `graph` verifier, written only against its public pack interface (pack.yaml, `define`,
`RULES`; docs/graph.md).

Concepts: Employee, LeavePlan, LeaveRequest, from the tables employees, plans and requests. A request is
governed by the plan for its employee's contract and its leave type. Every value a claim is checked
against is a relationship of LeaveRequest with three fields: the value, the rule that derived it, and
the plan it applied ("-" when none did). Two plans for one contract and leave type derive two values:
a conflict, which the verifier reports instead of picking one.

Dates are RelationalAI Dates; money is integer cents; leave days are calendar days.
"""

from __future__ import annotations

from verifybench.verifiers.graph.pack import NO_BASIS, Rule

# Facts every plan rule reads to find the plan that applies.
_PLAN = ("request.employee_id", "employee.contract", "request.leave_type", "plan.contract", "plan.leave_type")

RULES: dict[str, Rule] = {
    "contract_from_employee": Rule("a request's contract type is the contract of the employee who made it",
                                   ("request.employee_id", "employee.contract")),
    "notice_from_plan": Rule("the notice a request needs is its plan's notice period", (*_PLAN, "plan.notice_days")),
    "balance_from_plan": Rule("the days left before the request = the plan's yearly entitlement - the days of "
                              "this leave type already taken this year",
                              (*_PLAN, "plan.entitlement_days", "request.days_used")),
    "balance_exhausted": Rule("no days are left once the days taken reach the entitlement",
                              (*_PLAN, "plan.entitlement_days", "request.days_used")),
    "approved_all_conditions": Rule("a request is approved when the employee has served the plan's minimum service "
                                    "by the start date, it was submitted at least the notice period before the "
                                    "start, and its days fit in the days left",
                                    (*_PLAN, "employee.hire_date", "plan.min_service_days", "request.submitted",
                                     "request.start_date", "plan.notice_days", "request.days", "request.days_used",
                                     "plan.entitlement_days")),
    "refused_short_notice": Rule("a request submitted less than the notice period before its start is refused",
                                 (*_PLAN, "request.submitted", "request.start_date", "plan.notice_days")),
    "refused_over_balance": Rule("a request for more days than are left is refused",
                                 (*_PLAN, "request.days", "request.days_used", "plan.entitlement_days")),
    "refused_in_probation": Rule("a request starting before the employee has served the plan's minimum service is refused",
                                 (*_PLAN, "employee.hire_date", "request.start_date", "plan.min_service_days")),
    "return_after_leave": Rule("an approved leave ends after its days: the first day back = start date + days",
                               ("request.start_date", "request.days")),
    "pay_from_plan": Rule("an approved leave pays days x daily rate x the plan's pay percentage, rounded to the cent",
                          (*_PLAN, "request.days", "employee.daily_rate", "plan.pay_pct")),
    "pay_refused": Rule("a refused request pays nothing", _PLAN),
    "paid_from_plan": Rule("a leave is paid when its plan's pay percentage is above zero", (*_PLAN, "plan.pay_pct")),
}


def define(model, tables) -> dict:
    """Declare the concepts, load the facts and add every rule to `model`.

    Returns: the concepts by name; `LeaveRequest` is the subject of claims.
    """
    from relationalai.semantics import Bool, Date, Integer, String
    from relationalai.semantics.std import datetime as dates
    from relationalai.semantics.std import math

    employees, plans, requests = tables["employees"], tables["plans"], tables["requests"]
    Employee = model.Concept("Employee", identify_by={"employee_id": String})
    LeavePlan = model.Concept("LeavePlan", identify_by={"plan_id": String})
    LeaveRequest = model.Concept("LeaveRequest", identify_by={"request_id": String})

    # --- facts -----------------------------------------------------------------------------------
    Employee.contract = model.Property(f"{Employee} works on a {String:contract} contract")
    Employee.hire_date = model.Property(f"{Employee} was hired on {Date:hire_date}")
    Employee.daily_rate = model.Property(f"{Employee} earns {Integer:daily_rate_cents} a day")
    LeavePlan.contract = model.Property(f"{LeavePlan} covers {String:contract} contracts")
    LeavePlan.leave_type = model.Property(f"{LeavePlan} covers {String:leave_type} leave")
    LeavePlan.entitlement = model.Property(f"{LeavePlan} grants {Integer:entitlement_days} days a year")
    LeavePlan.notice = model.Property(f"{LeavePlan} needs {Integer:notice_days} days of notice")
    LeavePlan.min_service = model.Property(f"{LeavePlan} needs {Integer:min_service_days} days of service")
    LeavePlan.pay_pct = model.Property(f"{LeavePlan} pays {Integer:pay_pct} percent")
    LeaveRequest.employee = model.Property(f"{LeaveRequest} is made by {Employee}")
    LeaveRequest.leave_type = model.Property(f"{LeaveRequest} asks for {String:leave_type} leave")
    LeaveRequest.submitted = model.Property(f"{LeaveRequest} was submitted on {Date:submitted}")
    LeaveRequest.start = model.Property(f"{LeaveRequest} starts on {Date:start_date}")
    LeaveRequest.days = model.Property(f"{LeaveRequest} lasts {Integer:days} days")
    LeaveRequest.used = model.Property(f"{LeaveRequest} follows {Integer:days_used} days taken this year")

    model.define(Employee.new(employee_id=employees.employee_id, contract=employees.contract,
                              hire_date=employees.hire_date, daily_rate=employees.daily_rate_cents))
    model.define(LeavePlan.new(plan_id=plans.plan_id, contract=plans.contract, leave_type=plans.leave_type,
                               entitlement=plans.entitlement_days, notice=plans.notice_days,
                               min_service=plans.min_service_days, pay_pct=plans.pay_pct))
    model.define(LeaveRequest.new(request_id=requests.request_id, leave_type=requests.leave_type,
                                  submitted=requests.submitted, start=requests.start_date, days=requests.days,
                                  used=requests.days_used))
    e = Employee.ref()
    model.where(LeaveRequest.request_id == requests.request_id, e.employee_id == requests.employee_id).define(
        LeaveRequest.employee(e))

    # --- the plan that governs a request (two = a conflict, none = unsupported) -------------------
    p = LeavePlan.ref()
    LeaveRequest.plan = model.Relationship(f"{LeaveRequest} is governed by {LeavePlan}")
    model.where(LeaveRequest.employee(e), e.contract == p.contract, LeaveRequest.leave_type == p.leave_type).define(
        LeaveRequest.plan(p))

    R = LeaveRequest
    # --- values a claim is checked against: (value, rule, plan id) ---------------------------------
    R.contract = model.Relationship(f"{R} is under contract {String:contract} by {String:rule} under {String:basis}")
    model.where(R.employee(e)).define(R.contract(e.contract, "contract_from_employee", NO_BASIS))

    R.notice = model.Relationship(f"{R} needs notice {Integer:days} by {String:rule} under {String:basis}")
    model.where(R.plan(p)).define(R.notice(p.notice, "notice_from_plan", p.plan_id))

    R.remaining = model.Relationship(f"{R} leaves {Integer:days} days by {String:rule} under {String:basis}")
    model.where(R.plan(p), R.used <= p.entitlement).define(R.remaining(p.entitlement - R.used, "balance_from_plan", p.plan_id))
    model.where(R.plan(p), R.used > p.entitlement).define(R.remaining(0, "balance_exhausted", p.plan_id))

    notice_given = dates.date.period_days(R.submitted, R.start)
    service = dates.date.period_days(e.hire_date, R.start)
    R.approved = model.Relationship(f"{R} is approved {Bool:approved} by {String:rule} under {String:basis}")
    model.where(R.plan(p), R.employee(e), service >= p.min_service, notice_given >= p.notice,
                R.days + R.used <= p.entitlement).define(R.approved(True, "approved_all_conditions", p.plan_id))
    model.where(R.plan(p), notice_given < p.notice).define(R.approved(False, "refused_short_notice", p.plan_id))
    model.where(R.plan(p), R.days + R.used > p.entitlement).define(R.approved(False, "refused_over_balance", p.plan_id))
    model.where(R.plan(p), R.employee(e), service < p.min_service).define(
        R.approved(False, "refused_in_probation", p.plan_id))

    rule, pid = String.ref(), String.ref()
    R.back_on = model.Relationship(f"{R} ends with a return on {Date:back_on} by {String:rule} under {String:basis}")
    model.where(R.approved(True, rule, pid)).define(
        R.back_on(dates.date.add(R.start, dates.days(R.days)), "return_after_leave", NO_BASIS))

    R.pay = model.Relationship(f"{R} pays {Integer:cents} by {String:rule} under {String:basis}")
    model.where(R.approved(True, rule, pid), R.plan(p), p.plan_id == pid, R.employee(e)).define(
        R.pay(math.floor_divide(R.days * e.daily_rate * p.pay_pct + 50, 100), "pay_from_plan", pid))
    model.where(R.approved(False, rule, pid)).define(R.pay(0, "pay_refused", pid))

    R.paid = model.Relationship(f"{R} is paid leave {Bool:paid} by {String:rule} under {String:basis}")
    model.where(R.plan(p), p.pay_pct > 0).define(R.paid(True, "paid_from_plan", p.plan_id))
    model.where(R.plan(p), p.pay_pct == 0).define(R.paid(False, "paid_from_plan", p.plan_id))

    return {"Employee": Employee, "LeavePlan": LeavePlan, "LeaveRequest": LeaveRequest}

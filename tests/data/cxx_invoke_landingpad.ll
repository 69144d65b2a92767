; One C++ function of npm:utf-8-validate (MIT), as llmopt datagen extracted it: invoke + landingpad.
target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
target triple = "x86_64-pc-linux-gnu"
$_ZNK17is_utf8_internals8internal49detect_best_supported_implementation_on_first_use11descriptionB5cxx11Ev = comdat any
declare i32 @__gxx_personality_v0(...)
declare hidden void @__clang_call_terminate(ptr noundef) minsize noinline noreturn nounwind optsize uwtable
declare dso_local noundef ptr @_ZNK17is_utf8_internals8internal49detect_best_supported_implementation_on_first_use8set_bestEv(ptr noundef nonnull align 8 dereferenceable(80)) minsize mustprogress nounwind optsize uwtable align 2
define weak_odr dso_local noundef nonnull align 8 dereferenceable(32) ptr @_ZNK17is_utf8_internals8internal49detect_best_supported_implementation_on_first_use11descriptionB5cxx11Ev(ptr noundef nonnull align 8 dereferenceable(80) %0) unnamed_addr minsize mustprogress nounwind optsize uwtable comdat align 2 personality ptr @__gxx_personality_v0 {
%2 = alloca ptr, align 8
store ptr %0, ptr %2, align 8, !tbaa !5
%3 = load ptr, ptr %2, align 8
%4 = call noundef ptr @_ZNK17is_utf8_internals8internal49detect_best_supported_implementation_on_first_use8set_bestEv(ptr noundef nonnull align 8 dereferenceable(80) %3) minsize nounwind optsize
%5 = load ptr, ptr %4, align 8, !tbaa !9
%6 = getelementptr inbounds ptr, ptr %5, i64 1
%7 = load ptr, ptr %6, align 8
%8 = invoke noundef nonnull align 8 dereferenceable(32) ptr %7(ptr noundef nonnull align 8 dereferenceable(76) %4) #3
to label %9 unwind label %10
9:
ret ptr %8
10:
%11 = landingpad { ptr, i32 }
catch ptr null
%12 = extractvalue { ptr, i32 } %11, 0
call void @__clang_call_terminate(ptr %12) noreturn nounwind
unreachable
}
!5 = !{!6, !6, i64 0}
!6 = !{!"any pointer", !7, i64 0}
!7 = !{!"omnipotent char", !8, i64 0}
!8 = !{!"Simple C++ TBAA"}
!9 = !{!10, !10, i64 0}
!10 = !{!"vtable pointer", !8, i64 0}
